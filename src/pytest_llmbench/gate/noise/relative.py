"""Relative tolerance: a fraction of the baseline, for single numbers whose run-to-run noise is known in %."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_llmbench.gate.noise.base import NoiseModel
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Verdict
from pytest_llmbench.gate.verdict import threshold_rule


@dataclass(frozen=True)
class Relative(NoiseModel):
    """Fail when the value is worse than the baseline by more than ``frac·|baseline|``."""

    frac: float
    name = "Relative"
    gives_p = False  # a fixed band is a minimum effect, not a test: no p, outside the error budget

    def __post_init__(self) -> None:
        if not self.frac >= 0:
            raise ValueError(f"Relative(frac) needs frac >= 0, got {self.frac!r}")

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        tolerance = self.frac * abs(baseline.value)
        label = f"Relative {100 * self.frac:g}%"
        how = f"{100 * self.frac:g}%·{abs(baseline.value):.4g}"
        return self._verdict(
            baseline.value,
            observed,
            tolerance,
            threshold_rule(label, baseline.value, tolerance, direction, how),
            direction,
        )
