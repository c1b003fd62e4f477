"""Decision metrics against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from pytest_llmbench.datasets.decision_schema import Decision
from pytest_llmbench.evals.decisions.metrics import decision_values, ece, flat, per_decision, summary, summary_by


def dec(cid, qtype, probs, gold, ok=True):
    opts = ("yes", "no") if qtype == "noul" else tuple("abc"[: len(gold)])
    return Decision(
        cid, "q", qtype, "g", opts, tuple(probs) if ok else None, tuple(gold), ok=ok, reason=None if ok else "HTTP 500"
    )


DECISIONS = [
    dec("c1", "choice", (0.7, 0.2, 0.1), (1, 0, 0)),  # right, confident
    dec("c2", "noul", (0.6, 0.4), (0, 1)),  # wrong
    dec("c3", "noul", (0.8, 0.2), (0.5, 0.5)),  # soft gold: a teacher split 50/50
    dec("c4", "noul", (0.5, 0.5), (1, 0), ok=False),  # failed
]


def test_per_decision_hard_label():
    m = per_decision((0.7, 0.2, 0.1), (1, 0, 0))
    assert m["correct"] == 1
    assert m["log_loss"] == pytest.approx(-math.log(0.7))
    assert m["kl"] == pytest.approx(-math.log(0.7))  # KL = cross-entropy for one-hot gold
    assert m["brier"] == pytest.approx(0.3**2 + 0.2**2 + 0.1**2)  # 0.14
    assert m["decision_score"] == pytest.approx(93.0)  # 100 × (1 − 0.14 / 2)


def test_per_decision_soft_gold():
    m = per_decision((0.8, 0.2), (0.5, 0.5))
    assert m["kl"] == pytest.approx(0.5 * math.log(0.5 / 0.8) + 0.5 * math.log(0.5 / 0.2))
    assert m["log_loss"] == pytest.approx(-0.5 * math.log(0.8) - 0.5 * math.log(0.2))
    assert m["brier"] == pytest.approx(0.18)
    assert m["target"] == 0.5  # gold mass on the predicted top answer


def test_zero_probability_on_gold_is_clipped_not_infinite():
    m = per_decision((1.0, 0.0), (0, 1))
    assert math.isfinite(m["log_loss"]) and m["log_loss"] == pytest.approx(-math.log(1e-6))


def test_summary_counts_failures_as_wrong_and_scores_the_answered():
    s = summary(DECISIONS)
    assert (s["n"], s["answered"], s["failed"]) == (4, 3, 1)
    assert s["accuracy"] == pytest.approx(2 / 4)
    assert s["log_loss"] == pytest.approx(
        (-math.log(0.7) - math.log(0.4) + (-0.5 * math.log(0.8) - 0.5 * math.log(0.2))) / 3
    )
    assert s["brier"] == pytest.approx((0.14 + 0.72 + 0.18) / 3)
    assert s["decision_score"] == pytest.approx((93 + 64 + 91) / 3)
    # three confidences in three different bins: mean of |0.7 − 1|, |0.6 − 0|, |0.8 − 0.5|
    assert s["ece"] == pytest.approx((0.3 + 0.6 + 0.3) / 3)


def test_ece_pools_a_bin():
    # 0.71 and 0.72 share a 15-bin bucket: |mean conf − mean outcome| = |0.715 − 0.5|, weight 2/3
    assert ece([0.71, 0.72, 0.95], [1, 0, 1]) == pytest.approx((2 / 3) * 0.215 + (1 / 3) * 0.05)
    assert ece([0.71, 0.72, 0.95], [1, 0, 1], bins=1) == pytest.approx(abs((0.71 + 0.72 + 0.95) / 3 - 2 / 3))


def test_summary_by_type_and_flat_names():
    by = summary_by(DECISIONS)
    assert list(by) == ["all", "choice", "noul"]
    assert by["choice"]["accuracy"] == 1.0 and by["noul"]["accuracy"] == pytest.approx(1 / 3)
    f = flat(by)
    assert f["accuracy"] == by["all"]["accuracy"] and f["noul.failed"] == 1


def test_decision_values_for_pairing():
    v = decision_values(DECISIONS, "correct")
    assert v[("c4", "q")] == 0.0 and v[("c1", "q")] == 1.0
    assert decision_values(DECISIONS, "log_loss")[("c4", "q")] is None
    with pytest.raises(ValueError, match="unknown per-decision metric"):
        decision_values(DECISIONS, "ece")


def test_latency_per_case_one_request_per_case_or_one_per_question():
    """A route answers a case in one request (shared latency); the fallback asks each question in turn."""
    from pytest_llmbench.evals.decisions.metrics import case_latencies, latency_summary

    route = [Decision("c1", q, "noul", "g", ("yes", "no"), (0.5, 0.5), latency_s=0.166) for q in "abcde"]
    fallback = [
        Decision("c2", q, "noul", "g", ("yes", "no"), (0.5, 0.5), latency_s=t)
        for q, t in zip("ab", (0.1, 0.3), strict=True)
    ]
    untimed = [Decision("c3", "a", "noul", "g", ("yes", "no"), None, ok=False, reason="HTTP 500")]
    lat = case_latencies(route + fallback + untimed)
    assert lat == pytest.approx({"c1": 0.166, "c2": 0.4})
    s = latency_summary(route + fallback)
    assert s["cases"] == 2 and s["median_ms"] == pytest.approx(283.0) and s["mean_ms"] == pytest.approx(283.0)
    assert latency_summary(untimed) == {"cases": 0, "median_ms": None, "mean_ms": None}
