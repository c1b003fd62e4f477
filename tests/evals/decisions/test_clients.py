"""The decision clients against protocol doubles of /v1/systemone, /v1/decisions and chat logprobs."""

from __future__ import annotations

import math

import pytest

from pytest_llmbench.evals.decisions.clients import (
    DecisionsClient,
    LogprobClient,
    SystemOneClient,
    letter_probabilities,
)

SYSTEMONE_GOOD = {
    "queue": {"type": "choice", "choice": "tech", "probabilities": {"billing": 0.2, "tech": 0.7, "sales": 0.1},
              "confidence": 0.7},
    "urgency": {"type": "score", "score": 1.9, "probabilities": {"0": 0.1, "1": 0.2, "2": 0.4, "3": 0.3},
                "legend": {"0": "none"}},
    "angry": {"type": "noul", "noul": 0.25},
}


def by_key(decisions):
    return {d.key: d for d in decisions}


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


@pytest.mark.parametrize("bad, reason", [
    ({"queue": {"probabilities": {"billing": 0.5, "refunds": 0.5}}}, "unknown option 'refunds'"),
    ({"queue": {"choice": "tech"}}, "no probabilities"),
    ({"queue": {"probabilities": {"billing": float("nan"), "tech": 0.5, "sales": 0.5}}}, "NaN"),
    ({"angry": {"noul": 1.7}}, "not a probability"),
    ({"angry": {}}, "no P(yes)"),
    ({"urgency": {"probabilities": {"0": 0.5, "7": 0.5}}}, "unknown option '7'"),
    ({"urgency": None}, "no answer"),
])
def test_systemone_malformed_answers_become_failed_decisions(decision_double, cases, bad, reason):
    answers = {**SYSTEMONE_GOOD, **bad}
    decision_double.answer = lambda route, qid, q: answers[qid]
    out = SystemOneClient(decision_double.base_url).run(cases[:1])
    assert len(out) == 3  # never dropped
    failed = [d for d in out if not d.ok]
    assert len(failed) == 1 and reason in failed[0].reason and failed[0].probs is None
    assert all(d.ok for d in out if d.qid not in bad)


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


def test_decisions_route_shapes_temperature_and_answers(decision_double, cases):
    def answer(route, qid, q):
        if q["type"] == "boolean":
            return {"probability": 0.9}
        if q["type"] == "score":
            return {"distribution": [{"level": 0, "probability": 0.0}, {"level": 1, "probability": 0.5},
                                     {"level": 2, "probability": 0.5}, {"level": 3, "probability": 0.0}]}
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
    """The double mirrors the seeds: /v1/systemone refuses a temperature, so the client must not send one."""
    decision_double.answer = lambda route, qid, q: SYSTEMONE_GOOD[qid]
    out = SystemOneClient(decision_double.base_url, extra_body={"temperature": 0.5}).run(cases[:1])
    assert all(not d.ok and "HTTP 400" in d.reason for d in out)


def test_logprob_fallback_reads_letters_and_renormalises(decision_double, cases):
    seen = []

    def top(body):
        seen.append(body)
        return [{"token": "B", "logprob": math.log(0.5)}, {"token": " A", "logprob": math.log(0.2)},
                {"token": "A", "logprob": math.log(0.1)}, {"token": "The", "logprob": math.log(0.15)},
                {"token": "C.", "logprob": math.log(0.05)}]

    decision_double.top_logprobs = top
    out = by_key(LogprobClient(decision_double.base_url, concurrency=2).run(cases[:1]))
    body = seen[0]
    assert body["max_tokens"] == 1 and body["temperature"] == 0 and body["logprobs"] is True
    assert body["top_logprobs"] == 20 and body["chat_template_kwargs"] == {"enable_thinking": False}
    assert len(seen) == 3  # one request per question
    # queue: A = 0.2 + 0.1, B = 0.5, C = 0.05 → renormalised over the three options
    assert out["case0", "queue"].probs == pytest.approx((0.3 / 0.85, 0.5 / 0.85, 0.05 / 0.85))
    # yes/no: A (yes) 0.3, B (no) 0.5
    assert out["case0", "angry"].probs == pytest.approx((0.375, 0.625))
    # score has four letters; D is not listed → the smallest listed probability (an upper bound)
    assert out["case0", "urgency"].meta["missing_options"] == 1
    assert out["case0", "urgency"].probs == pytest.approx(tuple(x / 0.90 for x in (0.3, 0.5, 0.05, 0.05)))


def test_letter_probabilities_without_any_option_letter_fails():
    probs, reason, _ = letter_probabilities([{"token": "The", "logprob": -0.1}, {"token": "I", "logprob": -2}], 3)
    assert probs is None and "no option letter" in reason and "'The'" in reason
    probs, reason, _ = letter_probabilities([{"token": "A", "logprob": float("nan")}], 2)
    assert probs is None and "malformed" in reason


def test_logprob_fallback_missing_logprobs_is_a_failed_decision(decision_double, cases):
    decision_double.top_logprobs = lambda body: None
    out = LogprobClient(decision_double.base_url).run(cases[:1])
    assert len(out) == 3 and all(not d.ok for d in out)
    assert all("top_logprobs" in d.reason for d in out)


def _server(engine, **cfg):
    from types import SimpleNamespace

    from pytest_llmbench.models import ModelRef

    config = SimpleNamespace(request=cfg.pop("request", {}), model=ModelRef("path", "m.gguf"), **cfg)
    return SimpleNamespace(config=config, engine=engine, base_url="http://127.0.0.1:1")


def test_client_for_follows_the_route_the_engine_declares():
    from pytest_llmbench.engines.llamacpp import LlamaCppEngine
    from pytest_llmbench.engines.sglang import SGLangEngine
    from pytest_llmbench.evals.decisions.clients import client_for

    thinking_off = {"chat_template_kwargs": {"enable_thinking": False}, "temperature": 0.5}
    sglang = client_for(_server(SGLangEngine(), request=thinking_off))
    assert type(sglang) is SystemOneClient and sglang.route == SGLangEngine.decision_route == "/v1/systemone"
    assert sglang.extra_body == {"temperature": 0.5}  # chat-only fields stay off a decision route

    class OtherChatRoute(LlamaCppEngine):
        chat_path = "/chat"

    fallback = client_for(_server(OtherChatRoute(), request=thinking_off))
    assert type(fallback) is LogprobClient and fallback.route == "/chat"  # the engine's chat route
    assert fallback.extra_body == thinking_off
    assert type(client_for(_server(SGLangEngine()), "decisions")) is DecisionsClient
    with pytest.raises(ValueError, match="unknown decision client 'xml'"):
        client_for(_server(SGLangEngine()), "xml")
