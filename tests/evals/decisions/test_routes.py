"""SGLang's decision routes (/v1/systemone, /v1/decisions) against their protocol double."""

import pytest

from pytest_llmbench.evals.decisions.routes import DecisionsClient, SystemOneClient
from tests.evals.decisions.answers import SYSTEMONE_GOOD, by_key


def test_systemone_sends_its_shapes_and_reads_every_answer(decision_double, cases):
    decision_double.answer = lambda route, qid, q: SYSTEMONE_GOOD[qid]
    out = SystemOneClient(decision_double.base_url, model="m").run(cases)
    assert len(out) == 9 and all(d.ok for d in out), [d.reason for d in out]
    d = by_key(out)
    assert d["case0", "queue"].probs == pytest.approx((0.2, 0.7, 0.1))
    assert d["case0", "queue"].top == "tech"
    assert d["case0", "urgency"].probs == pytest.approx((0.1, 0.2, 0.4, 0.3))  # level index → option by position
    assert d["case0", "angry"].probs == pytest.approx((0.25, 0.75))  # P(yes) first
    path, body = decision_double.requests[0]
    assert path == "/v1/systemone" and "temperature" not in body and body["model"] == "m"
    assert body["questions"]["queue"]["criteria"] == {"billing": "money", "tech": "bugs", "sales": None}
    assert body["questions"]["urgency"]["criteria"] == ["none", "low", "high", "now"]
    assert len(decision_double.requests) == 3  # one request per case


@pytest.mark.parametrize(
    "bad, reason",
    [
        ({"queue": {"probabilities": {"billing": 0.5, "refunds": 0.5}}}, "unknown option 'refunds'"),
        ({"queue": {"choice": "tech"}}, "no probabilities"),
        ({"queue": {"probabilities": {"billing": float("nan"), "tech": 0.5, "sales": 0.5}}}, "NaN"),
        ({"angry": {"noul": 1.7}}, "not a probability"),
        ({"angry": {}}, "no P(yes)"),
        ({"urgency": {"probabilities": {"0": 0.5, "7": 0.5}}}, "unknown option '7'"),
        ({"urgency": None}, "no answer"),
    ],
)
def test_systemone_malformed_answers_become_failed_decisions(decision_double, cases, bad, reason):
    answers = {**SYSTEMONE_GOOD, **bad}
    decision_double.answer = lambda route, qid, q: answers[qid]
    out = SystemOneClient(decision_double.base_url).run(cases[:1])
    assert len(out) == 3  # never dropped
    failed = [d for d in out if not d.ok]
    assert len(failed) == 1 and reason in failed[0].reason and failed[0].probs is None
    assert all(d.ok for d in out if d.qid not in bad)


def test_decisions_route_shapes_temperature_and_answers(decision_double, cases):
    def answer(route, qid, q):
        if q["type"] == "boolean":
            return {"probability": 0.9}
        if q["type"] == "score":
            return {
                "distribution": [
                    {"level": 0, "probability": 0.0},
                    {"level": 1, "probability": 0.5},
                    {"level": 2, "probability": 0.5},
                    {"level": 3, "probability": 0.0},
                ]
            }
        return {"probabilities": {"billing": 1, "tech": 3}}  # unnormalised, one option left out

    decision_double.answer = answer
    out = by_key(DecisionsClient(decision_double.base_url, temperature=0.7).run(cases[:1]))
    path, body = decision_double.requests[0]
    assert path == "/v1/decisions" and body["temperature"] == 0.7
    assert body["questions"]["angry"] == {"type": "boolean", "instructions": "Is the customer angry?"}
    assert body["questions"]["urgency"]["criteria"][2] == {"level": 2, "description": "high"}
    assert out["case0", "angry"].probs == pytest.approx((0.9, 0.1))
    assert out["case0", "urgency"].probs == pytest.approx((0.0, 0.5, 0.5, 0.0))
    assert out["case0", "queue"].probs == pytest.approx((0.25, 0.75, 0.0))
    assert out["case0", "queue"].meta["missing_options"] == 1


def test_systemone_double_refuses_temperature(decision_double, cases):
    """The double mirrors the decisions post: /v1/systemone refuses a temperature, so the client must not send one."""
    decision_double.answer = lambda route, qid, q: SYSTEMONE_GOOD[qid]
    out = SystemOneClient(decision_double.base_url, extra_body={"temperature": 0.5}).run(cases[:1])
    assert all(not d.ok and "HTTP 400" in d.reason for d in out)
