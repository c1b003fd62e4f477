"""Known absolute spread: the width reruns of the same config are known to move by (BFCL: 8 cases)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_llmbench.gate.noise.base import NoiseModel
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Verdict, fmt
from pytest_llmbench.gate.verdict import threshold_rule


@dataclass(frozen=True)
class Spread(NoiseModel):
    """Fail when the value is worse than the baseline by more than ``spread`` (same unit as the metric)."""

    spread: float
    name = "Spread"
    gives_p = False  # a fixed band is a minimum effect, not a test: no p, outside the error budget

    def __post_init__(self) -> None:
        if not self.spread >= 0:
            raise ValueError(f"Spread(spread) needs spread >= 0, got {self.spread!r}")

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        tolerance = float(self.spread)
        rule = threshold_rule(f"Spread {fmt(tolerance)}", baseline.value, tolerance, direction, fmt(tolerance))
        return self._verdict(baseline.value, observed, tolerance, rule, direction)

    def stored_spread(self, history: tuple[float, ...]) -> float | None:
        return float(self.spread)
