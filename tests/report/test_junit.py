"""JUnit properties come from the emitted records, in one module."""

from types import SimpleNamespace

from pytest_llmbench.report import junit


def test_a_scenario_gives_one_property_per_number():
    props = junit.properties(
        {
            "record": "scenario",
            "scenario": "chat-1u",
            "metrics": {"output_throughput": 10.0, "completed": 3, "note": "x", "nan": None},
        }
    )
    assert props == [("llmbench.chat-1u.output_throughput", 10.0), ("llmbench.chat-1u.completed", 3)]


def test_a_check_gives_status_message_and_p_when_it_has_one():
    rec = {"record": "check", "metric": "ttft", "status": "pass", "message": "ttft within noise", "p_value": None}
    assert junit.properties(rec) == [
        ("llmbench.verdict.ttft", "pass"),
        ("llmbench.verdict.ttft.message", "ttft within noise"),
    ]
    assert junit.properties({**rec, "p_value": 0.2})[-1] == ("llmbench.verdict.ttft.p_value", 0.2)


def test_a_comparison_gives_verdict_estimate_and_p():
    rec = {
        "record": "comparison",
        "metric": "output_throughput",
        "verdict": "regressed",
        "ratio": 0.87,
        "p_value": 0.001,
    }
    assert junit.properties(rec) == [
        ("llmbench.comparison.output_throughput", "regressed"),
        ("llmbench.comparison.output_throughput.estimate", 0.87),
        ("llmbench.comparison.output_throughput.p_value", 0.001),
    ]
    diff = {"record": "comparison", "metric": "bfcl_passed", "verdict": "equivalent", "difference": 0.0}
    assert junit.properties(diff)[1] == ("llmbench.comparison.bfcl_passed.estimate", 0.0)


def test_other_kinds_and_session_lines_add_nothing():
    item = SimpleNamespace(user_properties=[])
    junit.pytest_llmbench_record({"record": "verdict", "metric": "x"}, item)
    junit.pytest_llmbench_record({"record": "scenario", "scenario": "s", "metrics": {"a": 1}}, None)
    assert item.user_properties == []
    junit.pytest_llmbench_record({"record": "scenario", "scenario": "s", "metrics": {"a": 1}}, item)
    junit.add_property(item, "bfcl_passed", 40)
    assert item.user_properties == [("llmbench.s.a", 1), ("llmbench.bfcl_passed", 40)]
