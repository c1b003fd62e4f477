"""BFCL: the checker on hand-made answers, both prompt modes' decoding, and the committed subsets."""

import ast
import json
from collections import Counter

import pytest

from pytest_llmbench.evals import bfcl

from .fakes import FakeRun, record


@pytest.fixture(scope="module")
def cases():
    ids = ["simple_python_0", "parallel_0", "irrelevance_0", "multiple_0"]
    return {c.id: c for c in bfcl.load_cases(ids)}


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
    calls = [{"spotify.play": {"artist": "Maroon 5", "duration": 15}},
             {"spotify.play": {"artist": "Taylor Swift", "duration": 20}}]
    assert bfcl.grade(cases["parallel_0"], calls).passed
    assert not bfcl.grade(cases["parallel_0"], calls[:1]).passed


def test_qwen_fc_decoding_reads_tool_call_blocks_after_thinking():
    text = ('<think>\nmaybe <tool_call>\n{"name": "wrong", "arguments": {}}\n</tool_call></think>\n\n'
            '<tool_call>\n{"name": "spotify.play", "arguments": {"artist": "A", "duration": 1}}\n</tool_call>\n'
            '<tool_call>\nnot json\n</tool_call>')
    assert bfcl.decode_qwen_fc(text) == [{"spotify.play": {"artist": "A", "duration": 1}}]
    assert bfcl.decode_qwen_fc("I can't help with that.") == []


def test_tools_mode_maps_legal_names_back_to_bfcls(cases):
    case = cases["parallel_0"]
    tools = bfcl.to_openai_tools(case.functions)
    assert tools[0]["function"]["name"] == "spotify_play"
    tc = [{"name": "spotify_play", "arguments": json.dumps({"artist": "Taylor Swift", "duration": 20})},
          {"name": "spotify_play", "arguments": '{"artist": "Maroon 5", "duration": 15}'}]
    v = bfcl.grade_record(case, record(tool_calls=tc), "tools")
    assert v.passed, v.error


def test_tools_mode_broken_arguments_fail_the_case(cases):
    v = bfcl.grade_record(cases["simple_python_0"],
                          record(tool_calls=[{"name": "calculate_triangle_area", "arguments": "{base: 10"}]), "tools")
    assert not v.passed and "not JSON" in v.error


def test_openai_tools_use_json_schema_types(cases):
    params = bfcl.to_openai_tools(cases["simple_python_0"].functions)[0]["function"]["parameters"]
    assert params["type"] == "object"
    assert params["properties"]["base"]["type"] == "integer"
    assert "Python 3 syntax" in bfcl.to_openai_tools(cases["simple_python_0"].functions)[0]["function"]["description"]
    nested = bfcl._schema({"type": "array", "items": {"type": "float"}})
    assert nested["items"]["type"] == "number"


def test_a_failed_request_fails_the_case(cases):
    v = bfcl.grade_record(cases["irrelevance_0"], record(ok=False), "qwen-fc")
    assert not v.passed and "request failed" in v.error


def test_run_bfcl_sends_each_mode_to_its_route(cases):
    class Srv:
        class engine:
            chat_path, completions_path = "/v1/chat/completions", "/v1/completions"

    case = cases["simple_python_0"]
    answer = '<tool_call>\n{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}\n</tool_call>'
    fake = FakeRun(lambda b: record(text=answer, e2e=0.25))
    res = bfcl.run_bfcl(Srv, [case, cases["irrelevance_0"]], "qwen-fc", run=fake)
    assert fake.calls[0]["path"] == "/v1/completions"
    assert fake.calls[0]["bodies"][0]["prompt"].endswith("<|im_start|>assistant\n")
    assert fake.calls[0]["bodies"][0]["temperature"] == 0.001
    assert res.per_category() == {"simple_python": (1, 1), "irrelevance": (0, 1)}
    assert res.passed == 1 and res.mean_latency_s() == pytest.approx(0.25)
    assert res.pass_fail() == {"irrelevance_0": "fail", "simple_python_0": "pass"}
    fake2 = FakeRun(lambda b: record(text="no call"))
    bfcl.run_bfcl(Srv, [case], "tools", run=fake2)
    assert fake2.calls[0]["path"] == "/v1/chat/completions" and "tools" in fake2.calls[0]["bodies"][0]
    with pytest.raises(ValueError, match="qwen-fc"):
        bfcl.run_bfcl(Srv, [case], "xml", run=fake2)


def test_committed_205_subset_is_what_the_seeded_draw_gives():
    ids = bfcl.read_subset(bfcl.SUBSET_205)
    assert len(ids) == len(set(ids)) == 205
    assert ids == bfcl.choose_subset(bfcl.QUOTAS_205)
    assert Counter(bfcl.category_of(i) for i in ids) == Counter(bfcl.QUOTAS_205)
    # the posts' named categories at their sizes: irrelevance, multi_turn_base, parallel, parallel_multiple 20 each
    assert all(bfcl.QUOTAS_205[c] == 20 for c in ("irrelevance", "multi_turn_base", "parallel", "parallel_multiple"))
    assert len(bfcl.QUOTAS_205) == 10 and all(10 <= n <= 25 for n in bfcl.QUOTAS_205.values())
    from pytest_llmbench.evals.bfcl_multi_turn import load_multi_turn_cases

    single = bfcl.subset_cases()
    multi = load_multi_turn_cases([i for i in ids if i.startswith("multi_turn")])
    assert len(single) == 185 and len(multi) == 20  # every id exists in the wheel, with an answer


def test_committed_cpu_subset_is_the_single_turn_draw():
    cpu = bfcl.read_subset(bfcl.SUBSET_CPU)
    single_turn = bfcl.choose_subset(bfcl.SINGLE_TURN_205)
    assert len(cpu) == 50 and set(cpu) <= set(single_turn)
    assert cpu == bfcl.choose_subset(bfcl.QUOTAS_CPU, within=sorted(single_turn))
    # the 205's single-turn part is that draw without `multiple`
    assert set(bfcl.read_subset(bfcl.SUBSET_205)) - set(single_turn) == {
        i for i in bfcl.read_subset(bfcl.SUBSET_205) if i.startswith("multi_turn")}


def test_unknown_case_id_is_an_error():
    with pytest.raises(KeyError, match="simple_python_99999"):
        bfcl.load_cases(["simple_python_99999"])


def test_our_qwen_fc_prompt_equals_the_handlers_on_the_205_subset():
    """Our own implementation against bfcl's QwenFCHandler._format_prompt, read from the wheel's source
    (the handler module itself imports the vendor SDKs, so only that function is compiled)."""
    src = (bfcl.data_dir().parent / "model_handler" / "local_inference" / "qwen_fc.py").read_text()
    fn = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef) and n.name == "_format_prompt")
    fn.decorator_list = []
    ns = {"json": json}
    exec(compile(ast.Module([fn], []), "qwen_fc._format_prompt", "exec"), ns)
    for case in bfcl.subset_cases():
        funcs = bfcl.with_python_hint(case.functions)
        assert bfcl.qwen_fc_prompt(case.messages, funcs) == ns["_format_prompt"](None, [dict(m) for m in case.messages], funcs), case.id


def test_checker_import_skips_bfcls_heavy_modules():
    import sys

    bfcl.checker()
    for heavy in ("bfcl_eval.utils", "bfcl_eval.constants.eval_config", "bfcl_eval.model_handler.base_handler"):
        assert heavy not in sys.modules


def test_by_case_is_one_or_zero_per_case_id(cases):
    res = bfcl.BFCLResult("tools", [bfcl.grade(cases["irrelevance_0"], None), bfcl.grade(cases["simple_python_0"], None)])
    assert res.by_case() == {"irrelevance_0": 1.0, "simple_python_0": 0.0}
