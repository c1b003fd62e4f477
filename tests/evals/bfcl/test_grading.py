"""BFCL grading: bfcl's checker on hand-made answers, a failed request, and running a set by request kind."""

import json

import pytest

from pytest_llmbench.evals import bfcl
from tests.evals.fakes import FakeRun, record


def test_a_correct_call_passes(cases):
    v = bfcl.grade(cases["simple_python_0"], [{"calculate_triangle_area": {"base": 10, "height": 5}}])
    assert v.passed, v.error


def test_a_wrong_argument_value_fails(cases):
    v = bfcl.grade(cases["simple_python_0"], [{"calculate_triangle_area": {"base": 10, "height": 6}}])
    assert not v.passed and "height" in v.error


def test_irrelevance_passes_without_a_call_and_fails_with_one(cases):
    case = cases["irrelevance_0"]
    assert bfcl.grade(case, []).passed
    assert bfcl.grade(case, None, decode_error="not a call").passed
    assert not bfcl.grade(case, [{"determine_body_mass_index": {"weight": 1.0, "height": 1.0}}]).passed


def test_a_missing_call_fails_a_case_that_needs_one(cases):
    assert not bfcl.grade(cases["simple_python_0"], []).passed


def test_parallel_calls_in_another_order_pass(cases):
    calls = [
        {"spotify.play": {"artist": "Maroon 5", "duration": 15}},
        {"spotify.play": {"artist": "Taylor Swift", "duration": 20}},
    ]
    assert bfcl.grade(cases["parallel_0"], calls).passed
    assert not bfcl.grade(cases["parallel_0"], calls[:1]).passed


def test_tools_mode_maps_legal_names_back_to_bfcls(cases):
    case = cases["parallel_0"]
    tools = bfcl.to_openai_tools(case.functions)
    assert tools[0]["function"]["name"] == "spotify_play"
    tc = [
        {"name": "spotify_play", "arguments": json.dumps({"artist": "Taylor Swift", "duration": 20})},
        {"name": "spotify_play", "arguments": '{"artist": "Maroon 5", "duration": 15}'},
    ]
    v = bfcl.grade_record(case, record(tool_calls=tc), "tools")
    assert v.passed, v.error


def test_tools_mode_broken_arguments_fail_the_case(cases):
    v = bfcl.grade_record(
        cases["simple_python_0"],
        record(tool_calls=[{"name": "calculate_triangle_area", "arguments": "{base: 10"}]),
        "tools",
    )
    assert not v.passed and "not JSON" in v.error


def test_a_failed_request_fails_the_case(cases):
    v = bfcl.grade_record(cases["irrelevance_0"], record(ok=False), "qwen-fc")
    assert not v.passed and "request failed" in v.error


def test_run_bfcl_sends_each_mode_as_its_request_kind(cases):
    class Srv:
        pass

    case = cases["simple_python_0"]
    answer = '<tool_call>\n{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}\n</tool_call>'
    fake = FakeRun(lambda b: record(text=answer, e2e=0.25))
    res = bfcl.run_bfcl(Srv, [case, cases["irrelevance_0"]], "qwen-fc", run=fake)
    assert fake.calls[0]["kind"] == "completions"
    assert fake.calls[0]["bodies"][0]["prompt"].endswith("<|im_start|>assistant\n")
    assert fake.calls[0]["bodies"][0]["temperature"] == 0.001
    assert res.per_category() == {"simple_python": (1, 1), "irrelevance": (0, 1)}
    assert res.passed == 1 and res.mean_latency_s() == pytest.approx(0.25)
    assert res.pass_fail() == {"irrelevance_0": "fail", "simple_python_0": "pass"}
    fake2 = FakeRun(lambda b: record(text="no call"))
    bfcl.run_bfcl(Srv, [case], "tools", run=fake2)
    assert fake2.calls[0]["kind"] == "chat" and "tools" in fake2.calls[0]["bodies"][0]
    with pytest.raises(ValueError, match="qwen-fc"):
        bfcl.run_bfcl(Srv, [case], "xml", run=fake2)


def test_checker_import_skips_bfcls_heavy_modules():
    import sys

    bfcl.checker()
    for heavy in ("bfcl_eval.utils", "bfcl_eval.constants.eval_config", "bfcl_eval.model_handler.base_handler"):
        assert heavy not in sys.modules


def test_by_case_is_one_or_zero_per_case_id(cases):
    res = bfcl.BFCLResult(
        "tools", [bfcl.grade(cases["irrelevance_0"], None), bfcl.grade(cases["simple_python_0"], None)]
    )
    assert res.by_case() == {"irrelevance_0": 1.0, "simple_python_0": 0.0}
