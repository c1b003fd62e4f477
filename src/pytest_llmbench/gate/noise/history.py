"""A spread learned from the baseline's own accepted values (BFCL reruns 168/174/176; timing between starts).

The reference is the mean of the ``m`` accepted values and the tolerance a one-sided prediction bound
for one new run, ``t(1−alpha, m−1)·s·√(1 + 1/m)`` with ``s`` their sample SD: Student's t, not a fixed
multiple of ``s``, because ``s`` from 3 runs is itself noisy (a fixed k=3 false-alarms ~5% at m=3 and
~0.7% at m=10). ``k`` is kept as the way to say the level: ``k=3`` means alpha = the normal tail beyond
3 SD (0.135%).

Until ``min_runs`` values are recorded the check is **learning**: shown with its history, never failing.
For timing the values are separate server starts (timing moves more between starts than within one:
two modes ~13% apart on one H200), and ``DEFAULT_MIN_RUNS`` is argued from the real reruns in
experiments/stored/history_minimum.out.md: with 3 starts the bound is ±19·s and catches almost nothing,
with 6 it holds and starts to decide. A ``fallback`` model, when given, judges instead of learning (a count
such as "answers changed", where a fixed band is meaningful from the first run).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from pytest_llmbench.gate.noise.base import NoiseModel, noise_from_dict
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Verdict, fmt
from pytest_llmbench.gate.verdict import threshold_rule


@dataclass(frozen=True)
class History(NoiseModel):
    """Fail when the value is worse than the history's mean beyond the one-sided prediction bound."""

    k: float = 3.0
    min_runs: int = 6
    fallback: NoiseModel | None = None
    name = "History"

    def __post_init__(self) -> None:
        if self.min_runs < 2:
            raise ValueError("History(min_runs) must be at least 2: one value has no spread")
        if not self.k > 0:
            raise ValueError(f"History(k) must be > 0, got {self.k!r}")

    @property
    def alpha(self) -> float:
        """The one-sided level ``k`` stands for: the normal tail beyond k SD."""
        return float(stats.norm.sf(self.k))

    @classmethod
    def from_params(cls, **params):  # type: ignore[no-untyped-def]
        fb = params.pop("fallback", None)
        if isinstance(fb, dict):
            params["fallback"] = noise_from_dict(fb)
        return cls(**params)

    def learned(self, history: tuple[float, ...]) -> bool:
        return len(history) >= self.min_runs

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        hist = np.asarray(baseline.accepted, dtype=float)
        m = int(hist.size)
        s = float(np.std(hist, ddof=1)) if m > 1 else 0.0
        if m < self.min_runs or s == 0:
            why = (
                f"{m} of {self.min_runs} runs recorded"
                if m < self.min_runs
                else f"all {m} recorded runs equal (no spread to learn)"
            )
            if self.fallback is None:
                return Verdict(
                    metric="",
                    observed=observed.value,
                    baseline=float(np.mean(hist)),
                    tolerance=None,
                    rule=f"learning ({why}; judged from {self.min_runs}; record more with "
                    f"--update-baselines or --llmbench-record)",
                    status="learning",
                    direction=direction,
                    noise=self.describe(),
                )
            v = self.fallback.verdict(baseline, observed, direction)
            return replace(v, noise=self.describe(), rule=f"History: {why}, fallback {v.rule}")
        mean = float(np.mean(hist))
        scale = s * float(np.sqrt(1 + 1 / m))
        t_crit = float(stats.t.ppf(1 - self.alpha, m - 1))
        tolerance = t_crit * scale
        worse_by = mean - observed.value if direction == "higher" else observed.value - mean
        p = float(stats.t.sf(worse_by / scale, m - 1))
        how = f"t({1 - self.alpha:.5g}, {m - 1})={t_crit:.3g}·{fmt(s)}·√(1+1/{m})"
        rule = threshold_rule(
            f"History k={self.k:g} (prediction bound, t) over {m} runs (mean, SD {fmt(s)})",
            mean,
            tolerance,
            direction,
            how,
        )
        return self._verdict(mean, observed, tolerance, rule, direction, p_value=p)

    def stored_spread(self, history: tuple[float, ...]) -> float | None:
        return float(np.std(history, ddof=1)) if len(history) > 1 else None
