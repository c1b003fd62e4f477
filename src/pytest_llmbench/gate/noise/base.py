"""The noise-model interface: a tolerance, and a rule that says in words how it was computed."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import fields
from typing import Any, ClassVar

from pytest_llmbench.gate.entry import BaselineEntry
from pytest_llmbench.gate.metric import Observation
from pytest_llmbench.gate.verdict import Direction, Status, Verdict, judge


class NoiseModelError(ValueError):
    """A check gave a noise model what it cannot work with (no SE for StdErr, no n for Binomial)."""


class NoiseModel(ABC):
    """Subclasses are frozen dataclasses; their fields are the parameters stored in the baseline file."""

    name: ClassVar[str]

    @abstractmethod
    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        """Judge ``observed`` against ``baseline``; config/test/metric are filled in by the session."""

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """What the baseline file records: ``{"name": "StdErr", "k": 2.0}``."""
        out: dict[str, Any] = {"name": self.name}
        for k, v in self.params().items():
            out[k] = v.to_dict() if isinstance(v, NoiseModel) else v
        return out

    @classmethod
    def from_params(cls, **params: Any) -> "NoiseModel":
        return cls(**params)

    def describe(self) -> str:
        args = ", ".join(f"{k}={v.describe() if isinstance(v, NoiseModel) else f'{v:g}' if isinstance(v, float) else v}"
                         for k, v in self.params().items() if v is not None)
        return f"{self.name}({args})"

    def stored_spread(self, history: tuple[float, ...]) -> float | None:
        """A spread worth writing beside the value for reviewers (Spread's width, History's SD)."""
        return None

    def _verdict(self, baseline: float, observed: Observation, tolerance: float, rule: str,
                 direction: Direction, status: Status | None = None) -> Verdict:
        return Verdict(
            metric="", observed=observed.value, baseline=baseline, tolerance=tolerance, rule=rule,
            status=status or judge(baseline, observed.value, tolerance, direction),
            direction=direction, noise=self.describe(),
        )
