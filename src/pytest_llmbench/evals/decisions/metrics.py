"""Scores of decisions against gold: per decision, then per question type and overall.

Per decision (probabilities p and gold g over the same options, g one-hot or soft):

* ``correct``: the top answer is the gold's top answer (agreement, for soft gold);
* ``kl``: KL(g ‖ p) = Σ g log(g / p);
* ``log_loss``: cross-entropy −Σ g log p (−log p[gold] for a hard label);
* ``brier``: Σ (p − g)², in [0, 2];
* ``decision_score``: 100 × (1 − brier / 2), the posts' DecisionScore before averaging;
* ECE over decisions: top-label confidence max p against g[argmax p] (0/1 for hard gold), in
  equal-width bins.

Probabilities are clipped at ``EPS`` inside logarithms. Failed decisions count as wrong for accuracy
(a run must not gain by failing) and are left out of the probability scores, whose ``answered`` count
says how many they cover; ``failed`` is always reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from pytest_llmbench.datasets.decision_schema import QUESTION_TYPES, Decision

EPS = 1e-6
ECE_BINS = 15
PROBABILITY_METRICS = ("kl", "log_loss", "brier", "decision_score")
#: Per-decision metrics a paired comparison can use, and which way is better.
DIRECTIONS = {"correct": "higher", "decision_score": "higher", "kl": "lower", "log_loss": "lower", "brier": "lower"}


def per_decision(probs: Sequence[float], gold: Sequence[float], eps: float = EPS) -> dict[str, float]:
    """Every per-decision metric of one answered decision."""
    p = np.asarray(probs, dtype=float)
    g = np.asarray(gold, dtype=float)
    if p.shape != g.shape:
        raise ValueError(f"{p.size} probabilities against {g.size} gold values")
    logp = np.log(np.clip(p, eps, 1.0))
    nz = g > 0
    brier = float(np.sum((p - g) ** 2))
    return {
        "correct": float(np.argmax(p) == np.argmax(g)),
        "kl": float(np.sum(g[nz] * (np.log(g[nz]) - logp[nz]))),
        "log_loss": float(-np.sum(g * logp)),
        "brier": brier,
        "decision_score": 100.0 * (1.0 - brier / 2.0),
        "confidence": float(np.max(p)),
        "target": float(g[int(np.argmax(p))]),
    }


def ece(confidence: Sequence[float], target: Sequence[float], bins: int = ECE_BINS) -> float:
    """Expected calibration error: Σ_b (n_b / n) |mean confidence_b − mean target_b|, equal-width bins."""
    conf = np.asarray(confidence, dtype=float)
    tgt = np.asarray(target, dtype=float)
    if conf.size == 0:
        return float("nan")
    idx = np.clip(np.digitize(conf, np.linspace(0.0, 1.0, bins + 1)[1:-1], right=True), 0, bins - 1)
    counts = np.bincount(idx, minlength=bins)
    gap = np.abs(np.bincount(idx, conf, bins) - np.bincount(idx, tgt, bins))
    return float(gap.sum() / conf.size) if counts.sum() else float("nan")


def scored(decisions: Iterable[Decision], eps: float = EPS) -> list[tuple[Decision, dict[str, float] | None]]:
    """Each decision with gold paired with its per-decision metrics (None when it failed)."""
    out = []
    for d in decisions:
        if d.gold is None:
            continue
        out.append((d, per_decision(d.probs, d.gold, eps) if d.ok and d.probs is not None else None))
    return out


def summary(decisions: Iterable[Decision], *, eps: float = EPS, bins: int = ECE_BINS) -> dict[str, Any]:
    """Metrics over a set of decisions (those with gold): counts, accuracy, KL, log loss, Brier, ECE, score."""
    rows = scored(decisions, eps)
    answered = [m for _, m in rows if m is not None]
    out: dict[str, Any] = {"n": len(rows), "answered": len(answered), "failed": len(rows) - len(answered)}
    if not rows:
        return out
    out["accuracy"] = float(sum(m["correct"] for m in answered) / len(rows))
    if answered:
        for k in PROBABILITY_METRICS:
            out[k] = float(np.mean([m[k] for m in answered]))
        out["ece"] = ece([m["confidence"] for m in answered], [m["target"] for m in answered], bins)
        out["mean_confidence"] = float(np.mean([m["confidence"] for m in answered]))
    return out


def summary_by(
    decisions: Iterable[Decision], key: Callable[[Decision], str] = lambda d: d.qtype, **kw: Any
) -> dict[str, dict[str, Any]]:
    """``{"all": summary, <group>: summary, …}``; groups default to the question type."""
    ds = list(decisions)
    out = {"all": summary(ds, **kw)}
    groups = sorted({key(d) for d in ds}, key=lambda g: (QUESTION_TYPES.index(g) if g in QUESTION_TYPES else 99, g))
    for g in groups:
        out[g] = summary([d for d in ds if key(d) == g], **kw)
    return out


def flat(by_group: dict[str, dict[str, Any]], prefix: str = "") -> dict[str, float]:
    """``{"all": {"accuracy": …}, "noul": {…}}`` → ``{"accuracy": …, "noul.accuracy": …}`` for bench.record
    ("noul": the yes/no questions, by their stored type name)."""
    out: dict[str, float] = {}
    for g, m in by_group.items():
        for k, v in m.items():
            out[f"{prefix}{k}" if g == "all" else f"{prefix}{g}.{k}"] = v
    return out


def decision_values(
    decisions: Iterable[Decision], metric: str, eps: float = EPS
) -> dict[tuple[str, str], float | None]:
    """Per-decision value of ``metric`` keyed by (case, question): a failure is 0 for ``correct``,
    None for a probability metric (left out of paired comparisons of that metric)."""
    if metric not in DIRECTIONS:
        raise ValueError(f"unknown per-decision metric {metric!r} (known: {sorted(DIRECTIONS)})")
    out: dict[tuple[str, str], float | None] = {}
    for d, m in scored(decisions, eps):
        out[d.key] = m[metric] if m is not None else (0.0 if metric == "correct" else None)
    return out


def case_latencies(decisions: Iterable[Decision]) -> dict[str, float]:
    """Seconds per case (the posts' "166 vs 386 ms per case"). A decision route answers a case in one
    request, so its decisions share one latency; the logprob fallback sends one request per question,
    one after another, so the case costs their sum. Both are the sum of the case's distinct latencies."""
    per_case: dict[str, set[float]] = {}
    for d in decisions:
        if d.latency_s is not None:
            per_case.setdefault(d.case_id, set()).add(float(d.latency_s))
    return {cid: sum(lat) for cid, lat in per_case.items()}


def latency_summary(decisions: Iterable[Decision]) -> dict[str, float | int | None]:
    """Median and mean milliseconds per case, and how many cases were timed."""
    ms = np.array(list(case_latencies(decisions).values()), dtype=float) * 1000.0
    if not len(ms):
        return {"cases": 0, "median_ms": None, "mean_ms": None}
    return {"cases": len(ms), "median_ms": float(np.median(ms)), "mean_ms": float(ms.mean())}
