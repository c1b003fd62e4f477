"""The first-token logprob fallback against the chat route of the protocol double."""

import math

import pytest

from pytest_llmbench.evals.decisions.logprobs import LogprobClient, letter_probabilities
from tests.evals.decisions.answers import by_key


def test_logprob_fallback_reads_letters_and_renormalises(decision_double, cases):
    seen = []

    def top(body):
        seen.append(body)
        return [
            {"token": "B", "logprob": math.log(0.5)},
            {"token": " A", "logprob": math.log(0.2)},
            {"token": "A", "logprob": math.log(0.1)},
            {"token": "The", "logprob": math.log(0.15)},
            {"token": "C.", "logprob": math.log(0.05)},
        ]

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
