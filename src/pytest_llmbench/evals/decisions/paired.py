"""Paired bootstrap intervals for the gap between two sets of answers to the same questions.

Two configs in one session (Swift vs stock) or a run and its baseline answered the same decisions, so
their gap is measured per decision and the interval comes from resampling *cases*: all decisions of a
case are drawn together, because questions about one state are not independent. The gap is
candidate − reference of the mean per-decision metric over the decisions both answered (a ratio of
per-case sums, so a case with eight questions weighs eight times one with one).

The interval and the p come from stats/clustered.py (a cluster t below 30 cases, the studentized bootstrap
from there), which the gate and the comparisons share. The interval is reported (results, JUnit); the gate on a run against its baseline is per question
through ``bench.check(..., cases=gate_cases(...), noise=PairedBootstrap(cluster=CASE_SEP))``
(gate/noise/paired.py), the same judgement with a one-sided p in the suite's error budget.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pytest_llmbench.datasets.decision_schema import Decision
from pytest_llmbench.evals.decisions.metrics import DIRECTIONS, decision_values
from pytest_llmbench.stats.clustered import ClusterMean, TooFewClusters, cluster_mean
from pytest_llmbench.stats.verdicts import DECISION_STATUS, from_bounds

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20261030


@dataclass(frozen=True)
class PairedGap:
    """candidate − reference for one metric, with a paired bootstrap interval over cases."""

    metric: str
    direction: str  # which way is better for the metric itself
    gap: float
    low: float
    high: float
    confidence: float
    n_cases: int
    n_decisions: int
    candidate: str = "candidate"
    reference: str = "reference"
    p_value: float | None = None  # one-sided bootstrap p that the candidate is worse (share of resamples not worse)

    @property
    def status(self) -> str:
        """``worse`` / ``better`` when the interval excludes zero on that side, else ``same`` (the one rule of
        stats/verdicts.py, with the interval as its bounds and no change as its band)."""
        verdict = from_bounds(self.low, self.high, band=(0.0, 0.0), higher_is_better=self.direction == "higher")
        return DECISION_STATUS[verdict]

    @property
    def worse(self) -> bool:
        return self.status == "worse"

    def describe(self) -> str:
        return (
            f"{self.metric}: {self.candidate} − {self.reference} = {self.gap:+.4f} "
            f"[{self.low:+.4f}, {self.high:+.4f}] ({self.confidence:.0%} paired bootstrap over "
            f"{self.n_cases} cases, {self.n_decisions} decisions; {self.direction} is better) → {self.status}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


def case_sums(
    values_a: Mapping[tuple[str, str], float | None], values_b: Mapping[tuple[str, str], float | None]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per case: Σ(a − b) and the number of decisions both have a value for."""
    diff: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for key, va in values_a.items():
        vb = values_b.get(key)
        if va is None or vb is None:
            continue
        diff[key[0]] += va - vb
        count[key[0]] += 1
    cases = sorted(diff)
    return cases, np.array([diff[c] for c in cases]), np.array([count[c] for c in cases], dtype=float)


def _cluster_mean(case_diff: np.ndarray, case_count: np.ndarray, resamples: int, seed: int) -> ClusterMean | None:
    """stats/clustered.py's judgement of Σdiff / Σcount over cases (None below its floor of cases)."""
    try:
        return cluster_mean(case_diff, case_count, resamples=resamples, seed=seed)
    except TooFewClusters:
        return None


def paired_bootstrap(
    case_diff: np.ndarray,
    case_count: np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float, float]:
    """(gap, low, high) of Σdiff / Σcount with cases as the unit (stats/clustered.py: a cluster t below 30
    cases, the studentized bootstrap from there; no interval below 4 cases)."""
    if case_count.sum() == 0:
        return float("nan"), float("nan"), float("nan")
    gap = float(case_diff.sum() / case_count.sum())
    cm = _cluster_mean(case_diff, case_count, resamples, seed)
    if cm is None:
        return gap, float("nan"), float("nan")
    low, high = cm.bounds((1 - confidence) / 2)
    return gap, low, high


def bootstrap_p_worse(
    case_diff: np.ndarray,
    case_count: np.ndarray,
    direction: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> float | None:
    """One-sided p that the candidate is worse than the reference (the level at which the one-sided bound
    just touches 0), from the same judgement as :func:`paired_bootstrap`; None below its floor."""
    if case_count.sum() == 0:
        return None
    cm = _cluster_mean(case_diff, case_count, resamples, seed)
    if cm is None:
        return None
    return cm.p_below(0.0) if direction == "higher" else cm.p_above(0.0)


def paired_gap(
    candidate: Iterable[Decision],
    reference: Iterable[Decision],
    metric: str = "correct",
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    names: tuple[str, str] = ("candidate", "reference"),
) -> PairedGap:
    """The gap of ``metric`` (see :data:`metrics.DIRECTIONS`) between two answer sets, paired by
    (case, question), with a bootstrap interval over cases."""
    a = decision_values(candidate, metric)
    b = decision_values(reference, metric)
    cases, diff, count = case_sums(a, b)
    gap, low, high = paired_bootstrap(diff, count, confidence=confidence, resamples=resamples, seed=seed)
    p = bootstrap_p_worse(diff, count, DIRECTIONS[metric], resamples=resamples, seed=seed)
    return PairedGap(
        metric,
        DIRECTIONS[metric],
        gap,
        low,
        high,
        confidence,
        len(cases),
        int(count.sum()),
        candidate=names[0],
        reference=names[1],
        p_value=p,
    )


CASE_SEP = "::"  # "<case id>::<question id>": the part before it is the cluster a paired gate resamples


def gate_cases(decisions: Iterable[Decision], metric: str = "correct") -> dict[str, float]:
    """``{"<case>::<question>": value}`` for ``bench.check(..., cases=…, noise=PairedBootstrap(cluster=CASE_SEP))``,
    the per-question gate against the baseline's sidecar; questions without a value (a failed answer
    for a probability metric) are left out."""
    return {f"{c}{CASE_SEP}{q}": v for (c, q), v in decision_values(decisions, metric).items() if v is not None}


def changed_answers(a: Iterable[Decision], b: Iterable[Decision]) -> int:
    """How many decisions both answered have a different top answer in ``a`` and ``b``."""
    tops_b = {d.key: d.top for d in b}
    return sum(1 for d in a if d.top is not None and tops_b.get(d.key) is not None and tops_b[d.key] != d.top)
