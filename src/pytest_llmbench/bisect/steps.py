"""What a bisect step is and what it answers: the plain data the search (search.py) hands out and takes back.

A :class:`Step` is one comparison to run, its :class:`StepResult` the answer (an outcome, its cost, and the
deciding metric's :class:`Reading`), and :class:`Finding` the search's end with the range it narrowed to.
The helpers that only read build states (:func:`pick_middle`, :func:`ahead`) live here too, so a resumed
run (resume.py) and a build farm's look-ahead use them without the search.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["different", "same", "unknown", "skip"]
OUTCOMES: tuple[str, ...] = ("different", "same", "unknown", "skip")
#: What a build is known to be after the search (``untested``: the search never needed it).
STATES = ("good", "bad", "skip", "unknown", "untested")


@dataclass(frozen=True)
class Reading:
    """A step's measured change on the log scale, oriented so that worse is positive (tok/s ×0.97 → +0.030),
    and its standard error."""

    change: float
    se: float


def reading_of(shown: Mapping[str, Any] | None) -> Reading | None:
    """The :class:`Reading` of a comparison record (``ratio``, ``ci_low``, ``ci_high``, ``higher_is_better``;
    ``se`` where recorded, else the 95% interval's half-width / 1.96); None for a difference or a gap."""
    if not shown:
        return None
    ratio, low, high = shown.get("ratio"), shown.get("ci_low"), shown.get("ci_high")
    if not all(isinstance(v, (int, float)) and v > 0 for v in (ratio, low, high)):
        return None
    assert isinstance(ratio, (int, float)) and isinstance(low, (int, float)) and isinstance(high, (int, float))
    se = shown.get("se")
    if not (isinstance(se, (int, float)) and math.isfinite(se) and se > 0):
        se = (math.log(high) - math.log(low)) / (2 * 1.959963984540054)
    if not se > 0:
        return None
    change = math.log(ratio)
    return Reading(-change if shown.get("higher_is_better", True) else change, float(se))


def resemblance(step: Reading, ends: Reading) -> float:
    """z of the step's change against half the ends' change: > 0 resembles the bad end, < 0 the good one."""
    return (step.change - ends.change / 2) / math.sqrt(step.se**2 + ends.se**2 / 4)


@dataclass(frozen=True)
class Step:
    """One comparison to run: ``kind`` is ``ends`` (good vs bad first), ``bisect`` or ``confirm``."""

    number: int
    kind: str
    reference: int
    candidate: int
    attempt: int = 0  # 0 first; each retry of an unknown step runs more units
    #: the first attempt's units as a multiple of the session's own (a step sized for the ends' change)
    scale: float = 1.0

    @property
    def units(self) -> float:
        """Units relative to an unsized first attempt: ``scale`` × 2^attempt."""
        return self.scale * 2**self.attempt


@dataclass(frozen=True)
class StepResult:
    outcome: str
    seconds: float  # what the step cost (the device was held): materializing + the session
    #: the part of ``seconds`` spent materializing builds (a build or a pull, once: later steps hit the cache)
    build_seconds: float = 0.0
    #: the build that failed (outcome ``skip``): the step's reference or candidate
    skipped: int | None = None
    reason: str = ""
    #: whatever the runner wants kept per step (ratio, interval, results folder); opaque here
    details: Mapping[str, Any] = field(default_factory=dict)
    #: answered from an earlier run's record (resume.py): costs this run nothing, but its seconds price the rest
    replayed: bool = False
    #: the deciding metric's change and SE (runner.py reads it off the shown comparison); the ``resemble``
    #: rule needs it, the ``verdict`` rule ignores it
    reading: Reading | None = None

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"step outcome {self.outcome!r}: one of {', '.join(OUTCOMES)}")
        if self.outcome == "skip" and self.skipped is None:
            raise ValueError("a skip names the build that failed")


@dataclass
class Finding:
    """The search's answer: ``status`` and the range ``last_good`` → ``first_bad`` it narrowed to."""

    #: culprit (one build, confirmed), range (confirmed, but skipped/undecided builds lie between),
    #: unknown (budget spent, or the pair did not confirm), not-reproduced (the ends compare same or
    #: unknown), broken-end (the good or bad build cannot be run)
    status: str
    last_good: int
    first_bad: int
    message: str
    states: list[str]
    reasons: dict[int, str]
    steps: list[tuple[Step, StepResult]]

    @property
    def seconds(self) -> float:
        """Device time of the steps this run made (replayed steps were paid for by the run that recorded them)."""
        return sum(r.seconds for _, r in self.steps if not r.replayed)

    @property
    def comparisons(self) -> int:
        return len(self.steps)

    @property
    def culprit(self) -> int | None:
        return self.first_bad if self.status == "culprit" else None

    def to_go_on(self, levels: int = 2) -> list[int]:
        """The builds a resumed run needs, in the order it needs them: the last good one (every next step's
        reference), then :func:`ahead`'s middles, or the first bad one when only the confirmation is left.
        Empty unless the search stopped short: ``unknown`` (untested builds or an unconfirmed pair), or ends that
        stayed inconclusive (a retry with more units may yet separate them: both ends)."""
        if self.status == "not-reproduced" and self.steps and self.steps[-1][1].outcome == "unknown":
            return [self.last_good, self.first_bad]
        if self.status != "unknown":
            return []
        middles = ahead(self.last_good, self.first_bad, self.states, levels)
        return [self.last_good, *(middles or [self.first_bad])]


def max_comparisons(n: int) -> int:
    """Comparisons when no build is skipped or undecided: the ends, ⌈log2(n − 1)⌉ halvings, the confirmation."""
    return 2 + (math.ceil(math.log2(n - 1)) if n > 2 else 0)


def pick_middle(lo: int, hi: int, states: Sequence[str]) -> int | None:
    """The untested build nearest the middle of ``lo … hi`` (the lower on a tie), or None when none is left."""
    left = [i for i in range(lo + 1, hi) if states[i] == "untested"]
    if not left:
        return None
    middle = (lo + hi) / 2
    return min(left, key=lambda i: (abs(i - middle), i))


def ahead(lo: int, hi: int, states: Sequence[str], levels: int = 2) -> list[int]:
    """The builds the next ``levels`` halvings of ``lo … hi`` may compare, level by level: the next middle, then
    the middle of each half it may leave. A build farm prepares them in this order (Pinpoint looks ahead the
    same way); the first is certain, each later level holds one build per outcome so far."""
    order: list[int] = []
    frontier = [(lo, hi, list(states))]
    for _ in range(levels):
        nxt = []
        for a, b, known in frontier:
            mid = pick_middle(a, b, known)
            if mid is None:
                continue
            order.append(mid)
            bad, good = list(known), list(known)
            bad[mid], good[mid] = "bad", "good"
            nxt += [(a, mid, bad), (mid, b, good)]
        frontier = nxt
    return order


__all__ = [
    "OUTCOMES",
    "STATES",
    "Finding",
    "Outcome",
    "Reading",
    "Step",
    "StepResult",
    "ahead",
    "max_comparisons",
    "pick_middle",
    "reading_of",
    "resemblance",
]
