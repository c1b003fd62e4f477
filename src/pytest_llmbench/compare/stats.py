"""Reference vs candidate for one metric: an estimate, its interval at the look's level, and a verdict.

Every comparison is judged the same way, whatever the unit of pairing (round, prompt, case, question):
the two-sided interval at level ``1 - 2·alpha`` holds the two one-sided bounds at ``alpha`` each, so

- ``regressed``: the whole interval is worse than the margin (the one-sided test of "not worse by more
  than the margin" rejects at ``alpha``; ``p_value`` is that test's p);
- ``improved``: the whole interval is better than the margin;
- ``equivalent``: the interval lies inside ± margin (TOST: both one-sided tests reject at ``alpha``);
- ``inconclusive``: anything else — more rounds are needed, or the change is about the size of the margin.

Ratios live in log space (log-ratio t), so a 3% margin means the ratio interval inside [0.97, 1.03].
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats

VERDICTS = ("regressed", "equivalent", "inconclusive", "improved")
BOOTSTRAP_RESAMPLES = 9999


@dataclass(frozen=True)
class Comparison:
    """One metric's reference-vs-candidate result at one look."""

    metric: str
    kind: str  # "ratio" (candidate / reference) or "difference" (candidate - reference)
    reference: float
    candidate: float
    estimate: float
    ci_low: float
    ci_high: float
    margin: float
    higher_is_better: bool
    p_value: float  # one-sided p of "candidate not worse than reference by more than the margin"
    verdict: str
    n: int
    method: str
    confidence: float = float("nan")  # the interval's two-sided level, 1 - 2·alpha
    se: float = float("nan")  # standard error on the tested scale (log ratio or difference); t-based only

    @property
    def decided(self) -> bool:
        return self.verdict != "inconclusive"

    def as_record(self) -> dict[str, Any]:
        """The results.jsonl fields of a comparison (the caller adds config, rounds, ...)."""
        return {"metric": self.metric, "reference": self.reference, "candidate": self.candidate,
                self.kind: self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "confidence": self.confidence, "verdict": self.verdict, "p_value": self.p_value,
                "n": self.n, "method": self.method, "margin": self.margin, "kind": self.kind,
                "higher_is_better": self.higher_is_better}


def verdict_of(ci_low: float, ci_high: float, *, kind: str, margin: float, higher_is_better: bool) -> str:
    """The verdict of an interval on the estimate's own scale (ratio or difference) against ± margin."""
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "inconclusive"
    if kind == "ratio":
        lo_bound, hi_bound = 1.0 - margin, 1.0 + margin
    else:
        lo_bound, hi_bound = -margin, margin
    below, above = ci_high < lo_bound, ci_low > hi_bound
    if below or above:
        return "regressed" if below == higher_is_better else "improved"
    if lo_bound < ci_low and ci_high < hi_bound:
        return "equivalent"
    return "inconclusive"


def _check(metric: str, alpha: float, margin: float, kind: str) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"{metric}: alpha must be in (0, 0.5), got {alpha!r}")
    if not margin >= 0 or (kind == "ratio" and margin >= 1):
        raise ValueError(f"{metric}: margin must be >= 0{' and < 1 for a ratio' if kind == 'ratio' else ''}, "
                         f"got {margin!r}")


def _pairs(metric: str, reference: Sequence[float], candidate: Sequence[float], *, positive: bool
           ) -> tuple[np.ndarray, np.ndarray]:
    ref, cand = np.asarray(reference, dtype=float), np.asarray(candidate, dtype=float)
    if ref.ndim != 1 or ref.shape != cand.shape:
        raise ValueError(f"{metric}: reference and candidate must be paired 1-d sequences of the same length, "
                         f"got {ref.shape} and {cand.shape}")
    if not (np.all(np.isfinite(ref)) and np.all(np.isfinite(cand))):
        raise ValueError(f"{metric}: values must be finite (a failed round or prompt is left out by the caller)")
    if positive and (np.any(ref <= 0) or np.any(cand <= 0)):
        raise ValueError(f"{metric}: a ratio needs positive values, got min reference {ref.min():g}, "
                         f"min candidate {cand.min():g}")
    return ref, cand


def _worse_bound(kind: str, margin: float, higher_is_better: bool) -> float:
    """The null's boundary on the scale tested (log ratio or difference): worse by exactly the margin."""
    if kind == "ratio":
        return math.log1p(-margin) if higher_is_better else math.log1p(margin)
    return -margin if higher_is_better else margin


def _t_comparison(metric: str, d: np.ndarray, *, kind: str, reference: float, candidate: float, margin: float,
                  higher_is_better: bool, alpha: float, method: str) -> Comparison:
    """Paired t on per-pair differences ``d`` (log ratios for ``kind='ratio'``)."""
    n = d.size
    mean = float(d.mean()) if n else float("nan")
    low = high = se = float("nan")
    p = 1.0
    if n >= 2:
        if np.all(d == d[0]):  # no spread: the interval is the point (identical arms give exactly 0)
            low = high = mean
            se = 0.0
            bound = _worse_bound(kind, margin, higher_is_better)
            p = 0.0 if (mean < bound if higher_is_better else mean > bound) else 1.0
        else:
            res = stats.ttest_1samp(d, popmean=_worse_bound(kind, margin, higher_is_better),
                                    alternative="less" if higher_is_better else "greater")
            p = float(res.pvalue)
            # two-sided at 1 - 2·alpha: each bound is the one-sided test at alpha (TOST reads both). The
            # quantile from t.isf, not 1 - alpha: a first look's alpha (1e-16) is lost in 1 - alpha
            se = float(stats.sem(d))
            half = float(stats.t.isf(alpha, n - 1) * se)
            low, high = mean - half, mean + half
    if kind == "ratio":  # a look at a tiny alpha can have a bound beyond float range: inf, not an error
        with np.errstate(over="ignore"):
            est, low, high = (float(x) for x in np.exp([mean, low, high]))
    else:
        est, low, high = mean, low, high
    return Comparison(metric, kind, reference, candidate, est, low, high, margin, higher_is_better, p,
                      verdict_of(low, high, kind=kind, margin=margin, higher_is_better=higher_is_better),
                      n, method, confidence=1 - 2 * alpha, se=se)


def _group_sums(metric: str, values: np.ndarray, labels: Sequence[Hashable], what: str
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per-label sums of ``values`` and counts (labels in sorted order): rounds, prompts or clusters."""
    keys = np.asarray(labels)
    if keys.shape != values.shape:
        raise ValueError(f"{metric}: {keys.size} {what} labels for {values.size} values")
    _, index = np.unique(keys, return_inverse=True)
    return np.bincount(index, weights=values), np.bincount(index).astype(float)


def compare_rounds(metric: str, reference: Sequence[float], candidate: Sequence[float], *,
                   higher_is_better: bool, margin: float, alpha: float) -> Comparison:
    """One value per round per arm (tok/s of each block), paired by round: t on the log ratios.

    Rounds, not requests, are the unit because throughput drifts within a session (thermal, host load);
    an ABBA block sees the same drift on both arms, so the per-round ratio cancels it.
    """
    _check(metric, alpha, margin, "ratio")
    ref, cand = _pairs(metric, reference, candidate, positive=True)
    return _t_comparison(metric, np.log(cand) - np.log(ref), kind="ratio",
                         reference=float(stats.gmean(ref)) if ref.size else float("nan"),
                         candidate=float(stats.gmean(cand)) if cand.size else float("nan"),
                         margin=margin, higher_is_better=higher_is_better, alpha=alpha,
                         method=f"log-ratio t over {ref.size} rounds")


def compare_paired(metric: str, reference: Sequence[float], candidate: Sequence[float], *,
                   higher_is_better: bool, margin: float, alpha: float, relative: bool = False,
                   rounds: Sequence[Hashable] | None = None, unit: str = "rounds") -> Comparison:
    """One value per prompt per arm (latency, accept length), same prompts in the same order: paired t.

    ``relative=True`` compares log ratios (latency: a 5% slower TPOT is the same finding on short and
    long prompts); otherwise differences (accept length: 0.1 tokens per step means the same everywhere).

    ``rounds`` (the round of each prompt) makes the round the unit: the per-prompt differences are
    averaged per round and the t runs over rounds. Pass it for timing: every prompt of a block shares the
    block's host state, so prompts of one round are not independent, and a t over prompts then reads a
    block's shock as signal (benches/perf/simulate_comparisons.out.md: 20–37% wrong "regressed" at the
    margin instead of ≤ 1%). Accept length does not depend on the host, so the prompt is its unit: pass
    each value's prompt as ``rounds`` with ``unit="prompts"`` (a prompt repeated over rounds is one
    observation, not one per round — greedy drafting repeats the same value every round).
    """
    kind = "ratio" if relative else "difference"
    _check(metric, alpha, margin, kind)
    ref, cand = _pairs(metric, reference, candidate, positive=relative)
    if relative:
        d = np.log(cand) - np.log(ref)
        summary = (float(stats.gmean(ref)), float(stats.gmean(cand))) if ref.size else (math.nan, math.nan)
        method = f"paired log-ratio t over {ref.size} prompts"
    else:
        d = cand - ref
        summary = (float(ref.mean()), float(cand.mean())) if ref.size else (math.nan, math.nan)
        method = f"paired t over {ref.size} prompts"
    if rounds is not None:
        sums, counts = _group_sums(metric, d, rounds, "round")
        d = sums / counts
        method = method.replace(f"over {ref.size} prompts", f"over {d.size} {unit} ({ref.size} requests)")
    return _t_comparison(metric, d, kind=kind, reference=summary[0], candidate=summary[1], margin=margin,
                         higher_is_better=higher_is_better, alpha=alpha, method=method)


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact one-sided bounds (each at ``alpha``) for a binomial proportion: the beta quantiles that
    ``binomtest(k, n).proportion_ci(1 - 2·alpha)`` returns, without its per-call cost."""
    low = 0.0 if k == 0 else float(stats.beta.isf(1 - alpha, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))
    return low, high


def _pass_rate_gap(lost: int, won: int, n: int, alpha: float, margin: float) -> tuple[float, float]:
    """One-sided bounds at ``alpha`` for the pass-rate difference ψ·(1 − 2θ) over the exact box of ψ (share
    of discordant cases) and θ (share of those the candidate lost): alpha/2 on each, as the extremes of a
    bilinear function lie at the box's corners. Without a margin only the sign matters, which θ alone
    decides, so θ gets the whole alpha (the textbook exact McNemar test)."""
    disc = lost + won
    a_theta = alpha if margin == 0 else alpha / 2
    theta_lo, theta_hi = clopper_pearson(lost, disc, a_theta) if disc else (0.0, 1.0)
    psi_lo, psi_hi = clopper_pearson(disc, n, alpha / 2) if margin else (disc / n, disc / n)
    corners_low = (psi_lo * (1 - 2 * theta_hi), psi_hi * (1 - 2 * theta_hi))
    corners_high = (psi_lo * (1 - 2 * theta_lo), psi_hi * (1 - 2 * theta_lo))
    return min(corners_low), max(corners_high)


def compare_pass_fail(metric: str, reference: Sequence[bool], candidate: Sequence[bool], *,
                      margin: float, alpha: float) -> Comparison:
    """Pass/fail per case, same cases: exact McNemar, with the margin on the pass-rate difference.

    Over ``n`` cases the difference is ψ·(1 − 2θ), ψ the share of cases the arms disagree on and θ the
    share of those the candidate lost. The exact McNemar test is the binomial on θ; with a margin the
    null "worse by δ" also depends on ψ, so ψ gets its own exact (Clopper–Pearson) bound and the interval
    is taken over both (:func:`_pass_rate_gap`). Reading ψ as known (D/n) instead said "equivalent" 64% of
    the time for a candidate exactly 2 points worse when the arms disagree on 2% of cases
    (benches/perf/simulate_comparisons.out.md). With margin 0 this is the exact McNemar test.
    ``p_value`` is the smallest alpha at which the interval lies wholly below −margin.
    """
    _check(metric, alpha, margin, "difference")
    ref, cand = _pairs(metric, np.asarray(reference, dtype=float), np.asarray(candidate, dtype=float),
                       positive=False)
    if not np.all(np.isin(ref, (0, 1))) or not np.all(np.isin(cand, (0, 1))):
        raise ValueError(f"{metric}: pass/fail values must be booleans (0/1)")
    n = ref.size
    lost = int(np.sum((ref == 1) & (cand == 0)))
    won = int(np.sum((ref == 0) & (cand == 1)))
    conf = 1 - 2 * alpha
    method = f"exact McNemar on {n} cases ({lost} lost, {won} won)"
    if n == 0:
        return Comparison(metric, "difference", math.nan, math.nan, math.nan, math.nan, math.nan, margin, True,
                          1.0, "inconclusive", 0, method, conf)
    low, high = _pass_rate_gap(lost, won, n, alpha, margin)

    def excess(a: float) -> float:  # > 0 while the upper bound at level a is not below -margin
        return _pass_rate_gap(lost, won, n, a, margin)[1] + margin

    if excess(0.5 - 1e-9) >= 0:
        p = 1.0
    elif excess(1e-15) < 0:
        p = 1e-15
    else:
        p = float(optimize.brentq(excess, 1e-15, 0.5 - 1e-9, xtol=1e-15, rtol=1e-10))
    return Comparison(metric, "difference", float(ref.mean()), float(cand.mean()), (won - lost) / n, low, high,
                      margin, True, p, verdict_of(low, high, kind="difference", margin=margin,
                                                  higher_is_better=True), n, method, conf)


def compare_decisions(metric: str, reference: Sequence[float], candidate: Sequence[float], *,
                      higher_is_better: bool, margin: float, alpha: float, seed: int = 0,
                      clusters: Sequence[Hashable] | None = None) -> Comparison:
    """Per-question values (correct, log loss, ...): mean difference with a paired percentile bootstrap.

    ``clusters`` (one label per question): questions of one cluster (several questions about one case)
    are not independent, so clusters are resampled whole and the statistic is Σdiff / Σcount over the
    clusters drawn (as gate/noise/paired.py's PairedBootstrap does against a baseline).

    A bootstrap cannot resolve a tail smaller than a few resamples, so at a look whose alpha is below
    ``10 / resamples`` the interval is left open (inconclusive) rather than read off the extremes.
    """
    _check(metric, alpha, margin, "difference")
    ref, cand = _pairs(metric, reference, candidate, positive=False)
    n = ref.size
    conf = 1 - 2 * alpha
    method = f"paired bootstrap over {n} questions"
    if clusters is not None:
        sums, counts = _group_sums(metric, cand - ref, clusters, "cluster")
        method += f" in {sums.size} clusters"
        if sums.size < 2:
            return Comparison(metric, "difference", float(ref.mean()), float(cand.mean()), float((cand - ref).mean()),
                              math.nan, math.nan, margin, higher_is_better, 1.0, "inconclusive", n,
                              method + " (one cluster: nothing to resample)", conf)
    ref_mean = float(ref.mean()) if n else math.nan
    cand_mean = float(cand.mean()) if n else math.nan
    d = cand - ref
    est = float(d.mean()) if n else math.nan
    low = high = math.nan
    p = 1.0
    bound = _worse_bound("difference", margin, higher_is_better)
    if n >= 2 and np.all(d == d[0]):
        low = high = est
        p = 0.0 if (est < bound if higher_is_better else est > bound) else 1.0
    elif n >= 2 and alpha * BOOTSTRAP_RESAMPLES >= 10:
        def mean_diff(r: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
            return c.mean(axis=axis) - r.mean(axis=axis)

        def pooled(s: np.ndarray, k: np.ndarray, axis: int = -1) -> np.ndarray:
            return s.sum(axis=axis) / k.sum(axis=axis)

        data, statistic = ((sums, counts), pooled) if clusters is not None else ((ref, cand), mean_diff)
        res = stats.bootstrap(data, statistic, paired=True, vectorized=True,
                              n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=conf, method="percentile",
                              random_state=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        dist = res.bootstrap_distribution
        not_worse = int(np.sum(dist >= bound) if higher_is_better else np.sum(dist <= bound))
        p = (1 + not_worse) / (BOOTSTRAP_RESAMPLES + 1)
    elif n >= 2:
        method += f" (alpha {alpha:.2g} below what {BOOTSTRAP_RESAMPLES} resamples resolve: not judged)"
    return Comparison(metric, "difference", ref_mean, cand_mean, est, low, high, margin, higher_is_better, p,
                      verdict_of(low, high, kind="difference", margin=margin, higher_is_better=higher_is_better),
                      n, method, conf)
