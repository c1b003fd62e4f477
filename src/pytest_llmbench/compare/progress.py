"""The comparison's progress line: ``unit k of n, elapsed, ~remaining``, said as each unit starts, so a CI
log is not silent for the minutes between the plan line and the verdict. Every mode (both arms up,
per-block, two configs) plays units, so one line serves them all; the session says it past pytest's
capture (``tell``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: At most one line per this many seconds (a fast CPU comparison plays a unit a second).
EVERY_S = 5.0


@dataclass
class UnitProgress:
    """Fed every block and every plan; says ``name: unit k of n …`` through ``say``."""

    name: str
    say: Callable[[str], None]
    planned: int = 0  # units planned so far: the pilot's, then the plan's
    stage: str = "pilot"
    clock: Callable[[], float] = time.monotonic
    every_s: float = EVERY_S
    _t0: float = field(default=0.0, init=False)
    _first_unit_t: float | None = field(default=None, init=False)
    _unit: int = field(default=-1, init=False)
    _said_at: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._t0 = self.clock()

    def plan(self, units: int, stage: str = "planned") -> None:
        self.planned, self.stage = max(int(units), 0), stage

    def block(self, unit: int | None) -> str | None:
        """A block of ``unit`` (None: warm-up) started or finished; the line said, if one was."""
        if unit is None or unit <= self._unit:
            return None
        now = self.clock()
        if self._first_unit_t is None:
            self._first_unit_t = now
        self._unit = unit
        if self._said_at is not None and now - self._said_at < self.every_s:
            return None
        self._said_at = now
        line = self.line(unit + 1, now)
        self.say(line)
        return line

    def line(self, k: int, now: float) -> str:
        n = max(self.planned, k)
        done = k - 1
        elapsed = now - self._t0
        if done and self._first_unit_t is not None:
            per = (now - self._first_unit_t) / done
            left = f"~{_clock(per * (n - done))} remaining"
        else:
            left = "remaining: after the first unit"
        stage = f" ({self.stage})" if self.stage else ""
        return f"llmbench compare: {self.name}: unit {k} of {n}{stage}, {_clock(elapsed)} elapsed, {left}"


def _clock(seconds: float) -> str:
    s = max(0, round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
