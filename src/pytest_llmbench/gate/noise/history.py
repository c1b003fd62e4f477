"""A spread learned from the baseline's own accepted values (BFCL reruns 168/174/176; CPU tok/s drift).

The reference is the mean of the ``m`` accepted values and the tolerance a one-sided prediction bound
for one new run, ``t(1−alpha, m−1)·s·√(1 + 1/m)`` with ``s`` their sample SD: Student's t, not a fixed
multiple of ``s``, because ``s`` from 3 runs is itself noisy (a fixed k=3 false-alarms ~5% at m=3 and
~0.7% at m=10). ``k`` is kept as the way to say the level: ``k=3`` means alpha = the normal tail beyond
3 SD (0.135%). With fewer than ``min_runs`` values, or a history that never moved (SD 0: no spread to
learn), the ``fallback`` model judges and the rule says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats

from pytest_llmbench.gate.entry import BaselineEntry
from pytest_llmbench.gate.metric import Observation
from pytest_llmbench.gate.noise.base import NoiseModel
from pytest_llmbench.gate.noise.relative import Relative
from pytest_llmbench.gate.verdict import Direction, Verdict, fmt, threshold_rule


@dataclass(frozen=True)
class History(NoiseModel):
    """Fail when the value is worse than the history's mean beyond the one-sided prediction bound."""

    k: float = 3.0
    min_runs: int = 3
    fallback: NoiseModel = field(default_factory=lambda: Relative(0.10))
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
        from pytest_llmbench.gate.noise import noise_from_dict

        fb = params.pop("fallback", None)
        if isinstance(fb, dict):
            params["fallback"] = noise_from_dict(fb)
        return cls(**params)

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        hist = np.asarray(baseline.accepted, dtype=float)
        m = int(hist.size)
        s = float(np.std(hist, ddof=1)) if m > 1 else 0.0
        if m < self.min_runs or s == 0:
            why = f"{m} of {self.min_runs} runs recorded" if m < self.min_runs else \
                f"all {m} recorded runs equal (no spread to learn)"
            v = self.fallback.verdict(baseline, observed, direction)
            return replace(v, noise=self.describe(), rule=f"History: {why}, fallback {v.rule}")
        mean = float(np.mean(hist))
        scale = s * float(np.sqrt(1 + 1 / m))
        t_crit = float(stats.t.ppf(1 - self.alpha, m - 1))
        tolerance = t_crit * scale
        worse_by = mean - observed.value if direction == "higher" else observed.value - mean
        p = float(stats.t.sf(worse_by / scale, m - 1))
        how = f"t({1 - self.alpha:.5g}, {m - 1})={t_crit:.3g}·{fmt(s)}·√(1+1/{m})"
        rule = threshold_rule(f"History k={self.k:g} (prediction bound, t) over {m} runs (mean, SD {fmt(s)})",
                              mean, tolerance, direction, how)
        return self._verdict(mean, observed, tolerance, rule, direction, p_value=p)

    def stored_spread(self, history: tuple[float, ...]) -> float | None:
        return float(np.std(history, ddof=1)) if len(history) > 1 else None
