"""One stored baseline: the accepted value of a metric plus what the gate needs to judge its noise."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_llmbench.gate.verdict import Direction

HISTORY_LEN = 10  # accepted values kept per entry: enough for a learned spread, short enough to review


@dataclass(frozen=True)
class BaselineEntry:
    """``value`` is the last accepted measurement; ``history`` the last accepted values, oldest first
    (it includes ``value``); ``noise`` the noise model the entry was written with (name + params)."""

    value: float
    direction: Direction
    noise: dict[str, Any]
    n: int | None = None
    se: float | None = None
    spread: float | None = None
    history: tuple[float, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    cases: Mapping[str, float] | None = None  # per-case values keyed by case id (paired gates)

    @property
    def accepted(self) -> tuple[float, ...]:
        """The accepted values to learn a spread from (an entry without history has its value)."""
        return self.history or (self.value,)
