"""The bisect's search, as pure logic: which two builds to compare next, and what the answers mean.

Builds are indices ``0 … n-1`` in order, ``0`` the good end and ``n-1`` the bad one. Each step is one
comparison (reference = the nearest build known to be like the good end, candidate = the build under
test), answered by whoever runs it (runner.py: a pytest session) with one of Pinpoint's outcomes:

- ``different``: the candidate regressed against the reference: the change is at or before it;
- ``same``: equivalent: the change is after it;
- ``unknown``: inconclusive: the step is run again with more units (``attempt`` + 1, up to
  ``max_attempts``), then the build is left undecided and the search goes around it;
- ``skip``: a build failed to materialize or to start: named, and searched around, never called bad.

Both ends are compared first (mozregression: make sure the good end is good and the bad one bad, here
that the regression reproduces on this machine); the culprit pair is compared once more at the end
(Pinpoint's sandwich). A build is reported as the first slower one only when it and the last good one
are neighbours (nothing between them but skipped or undecided builds means a range) and that last
comparison says ``different``; anything else ends "unknown between X and Y", never in a wrong culprit.
The GPU-time budget is checked before every step against what the steps so far cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["different", "same", "unknown", "skip"]
OUTCOMES: tuple[str, ...] = ("different", "same", "unknown", "skip")
#: What a build is known to be after the search (``untested``: the search never needed it).
STATES = ("good", "bad", "skip", "unknown", "untested")


@dataclass(frozen=True)
class Step:
    """One comparison to run: ``kind`` is ``ends`` (good vs bad first), ``bisect`` or ``confirm``."""

    number: int
    kind: str
    reference: int
    candidate: int
    attempt: int = 0  # 0 first; each retry of an unknown step runs more units


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


class _Budget(Exception):
    """The next step would not fit the budget."""


class Search:
    """One bisect over ``n`` builds; :meth:`run` calls ``compare(step)`` until it has an answer."""

    def __init__(
        self,
        n: int,
        compare: Callable[[Step], StepResult],
        *,
        budget_s: float | None = None,
        max_attempts: int = 2,
        names: Sequence[str] | None = None,
        on_step: Callable[[Step, StepResult], None] | None = None,
        recorded: Callable[[Step], bool] | None = None,
        on_ahead: Callable[[list[int]], None] | None = None,
        look_ahead: int = 3,
    ) -> None:
        if n < 2:
            raise ValueError(f"a bisect needs a good and a bad build, got {n} build(s)")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if budget_s is not None and budget_s <= 0:
            raise ValueError(f"the budget must be > 0 seconds, got {budget_s}")
        self.n = n
        self._compare = compare
        self.budget_s = budget_s
        self.max_attempts = max_attempts
        self.names = list(names) if names is not None else [str(i) for i in range(n)]
        if len(self.names) != n:
            raise ValueError(f"{len(self.names)} names for {n} builds")
        self.on_step = on_step
        #: steps ``compare`` answers from a record (resume.py) at no device time: the budget never refuses them
        self.recorded = recorded or (lambda step: False)
        #: told before every step which builds the next steps may compare (a build farm prepares them ahead)
        self.on_ahead = on_ahead
        self.look_ahead = look_ahead
        self.states = ["untested"] * n
        self.reasons: dict[int, str] = {}
        self.steps: list[tuple[Step, StepResult]] = []

    # --- cost -----------------------------------------------------------------------------------------

    @property
    def spent(self) -> float:
        """Device time this run has used (steps replayed from a record cost it nothing)."""
        return sum(r.seconds for _, r in self.steps if not r.replayed)

    def expected(self, attempt: int) -> float:
        """A step's cost, predicted from the first attempts so far (retries run twice the units each).

        From their sessions alone: a build that took 5 minutes to materialize is cached for every later step,
        and counting it would refuse the retry an inconclusive ends step needs (it did, on the H200)."""
        firsts = [r.seconds - r.build_seconds for s, r in self.steps if s.attempt == 0 and r.outcome != "skip"]
        if not firsts:
            return 0.0
        return sum(firsts) / len(firsts) * 2**attempt

    def _fits(self, attempt: int) -> bool:
        if self.budget_s is None:
            return True
        return self.spent + self.expected(attempt) <= self.budget_s

    # --- steps ----------------------------------------------------------------------------------------

    def _run(self, kind: str, reference: int, candidate: int) -> StepResult:
        """One comparison, repeated with more units while it is unknown; :class:`_Budget` when it cannot run."""
        result: StepResult | None = None
        for attempt in range(self.max_attempts):
            step = Step(len(self.steps) + 1, kind, reference, candidate, attempt)
            # the first step always runs: it measures the cost (after a resume, the replayed steps priced it)
            if self.steps and not self.recorded(step) and not self._fits(attempt):
                if result is not None:
                    return result  # an unknown that could not be topped up stays unknown
                raise _Budget()
            result = self._compare(step)
            self.steps.append((step, result))
            if self.on_step is not None:
                self.on_step(step, result)
            if result.outcome != "unknown":
                return result
        assert result is not None
        return result

    def _name(self, i: int) -> str:
        return self.names[i]

    def _between(self, lo: int, hi: int) -> str:
        return f"between {self._name(lo)} and {self._name(hi)}"

    def _finding(self, status: str, lo: int, hi: int, message: str) -> Finding:
        return Finding(status, lo, hi, message, list(self.states), dict(self.reasons), list(self.steps))

    def _budget_message(self) -> str:
        return f"the budget is spent ({self.spent:.0f} of {self.budget_s:g} GPU-s, a step ~{self.expected(0):.0f})"

    def _announce(self, now: Sequence[int], between: tuple[int, int] | None = None) -> None:
        """``on_ahead``: the builds of the step about to run, then :func:`ahead`'s middles of ``between``."""
        if self.on_ahead is not None:
            later = ahead(*between, self.states, self.look_ahead) if between is not None else []
            self.on_ahead(list(dict.fromkeys([*now, *later])))

    # --- the search -----------------------------------------------------------------------------------

    def run(self) -> Finding:
        good, bad = 0, self.n - 1
        self._announce([good, bad], (good, bad))
        ends = self._run("ends", good, bad)
        if ends.outcome == "skip":
            which = "good" if ends.skipped == good else "bad"
            assert ends.skipped is not None
            self.states[ends.skipped] = "skip"
            self.reasons[ends.skipped] = ends.reason
            return self._finding(
                "broken-end", good, bad, f"the {which} build {self._name(ends.skipped)} cannot run: {ends.reason}"
            )
        if ends.outcome != "different":
            word = "equivalent" if ends.outcome == "same" else "not separable within the budget"
            return self._finding(
                "not-reproduced",
                good,
                bad,
                f"not reproduced: {self._name(bad)} against {self._name(good)} is {word} here; nothing to bisect",
            )
        self.states[good], self.states[bad] = "good", "bad"
        lo, hi = good, bad
        try:
            while (mid := pick_middle(lo, hi, self.states)) is not None:
                self._announce([lo], (lo, hi))
                r = self._run("bisect", lo, mid)
                if r.outcome == "different":
                    self.states[mid], hi = "bad", mid
                elif r.outcome == "same":
                    self.states[mid], lo = "good", mid
                elif r.outcome == "skip" and r.skipped == mid:
                    self.states[mid] = "skip"
                    self.reasons[mid] = r.reason
                else:  # unknown, or the known-good reference failed this time: undecided, never a guess
                    self.states[mid] = "unknown"
                    self.reasons[mid] = r.reason or "inconclusive after more units"
            self._announce([lo, hi])
            confirm = self._run("confirm", lo, hi)
        except _Budget:
            return self._finding("unknown", lo, hi, f"unknown {self._between(lo, hi)}: {self._budget_message()}")
        if confirm.outcome != "different":
            return self._finding(
                "unknown",
                lo,
                hi,
                f"unknown {self._between(lo, hi)}: the culprit pair did not confirm ({confirm.outcome}"
                f"{': ' + confirm.reason if confirm.reason else ''})",
            )
        between = [i for i in range(lo + 1, hi)]
        if between:
            named = ", ".join(f"{self._name(i)} ({self.states[i]})" for i in between)
            return self._finding(
                "range", lo, hi, f"the first slower build is {self._between(lo, hi)}, not narrower: {named}"
            )
        return self._finding(
            "culprit", lo, hi, f"first slower build: {self._name(hi)} (last good {self._name(lo)}; pair confirmed)"
        )


def bisect(n: int, compare: Callable[[Step], StepResult], **kw: Any) -> Finding:
    """``Search(n, compare, **kw).run()``."""
    return Search(n, compare, **kw).run()


__all__ = [
    "OUTCOMES",
    "STATES",
    "Finding",
    "Search",
    "Step",
    "StepResult",
    "ahead",
    "bisect",
    "max_comparisons",
    "pick_middle",
]
