"""A spread learned from the baseline's own accepted values (BFCL reruns 168/174/176; CPU tok/s drift).

The reference is the mean of the history and the tolerance a prediction band for one new run,
``k·s·√(1 + 1/m)`` with ``s`` the sample SD of ``m`` accepted values: it widens when few runs are known.
With fewer than ``min_runs`` values there is no spread to learn yet, so the ``fallback`` model judges and
the rule says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pytest_llmbench.gate.entry import BaselineEntry
from pytest_llmbench.gate.metric import Observation
from pytest_llmbench.gate.noise.base import NoiseModel
from pytest_llmbench.gate.noise.relative import Relative
from pytest_llmbench.gate.verdict import Direction, Verdict, fmt, threshold_rule


@dataclass(frozen=True)
class History(NoiseModel):
    """Fail when the value is worse than the history's mean by more than ``k·s·√(1+1/m)``."""

    k: float = 3.0
    min_runs: int = 3
    fallback: NoiseModel = field(default_factory=lambda: Relative(0.10))
    name = "History"

    def __post_init__(self) -> None:
        if self.min_runs < 2:
            raise ValueError("History(min_runs) must be at least 2: one value has no spread")

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
        if m < self.min_runs:
            v = self.fallback.verdict(baseline, observed, direction)
            return replace(v, noise=self.describe(),
                           rule=f"History: {m} of {self.min_runs} runs recorded, fallback {v.rule}")
        mean, s = float(np.mean(hist)), float(np.std(hist, ddof=1))
        tolerance = self.k * s * float(np.sqrt(1 + 1 / m))
        how = f"{self.k:g}·{fmt(s)}·√(1+1/{m})"
        rule = threshold_rule(f"History k={self.k:g} over {m} runs (mean, SD {fmt(s)})", mean, tolerance,
                              direction, how)
        return self._verdict(mean, observed, tolerance, rule, direction)

    def stored_spread(self, history: tuple[float, ...]) -> float | None:
        return float(np.std(history, ddof=1)) if len(history) > 1 else None
