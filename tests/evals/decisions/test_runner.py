"""The decision runner never raises: an HTTP error, a broken body or no server fails the decisions (protocol double)."""

from pytest_llmbench.evals.decisions.routes import DecisionsClient, SystemOneClient


def test_http_error_and_broken_body_fail_every_question_of_the_case(decision_double, cases):
    decision_double.status = 500
    out = SystemOneClient(decision_double.base_url).run(cases)
    assert len(out) == 9 and not any(d.ok for d in out)
    assert all(d.reason.startswith("HTTP 500") for d in out)
    decision_double.status, decision_double.raw = 200, b"not json{"
    out = DecisionsClient(decision_double.base_url).run(cases[:1])
    assert [d.ok for d in out] == [False] * 3 and "not JSON" in out[0].reason


def test_unreachable_server_fails_decisions_instead_of_raising(cases):
    out = SystemOneClient("http://127.0.0.1:9", timeout_s=2.0).run(cases[:1])
    assert len(out) == 3 and all(not d.ok and d.reason.startswith("transport") for d in out)
