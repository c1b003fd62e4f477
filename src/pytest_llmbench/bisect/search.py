"""The bisect's search, as pure logic: which two builds to compare next, and what the answers mean.

Builds are indices ``0 … n-1`` in order, ``0`` the good end and ``n-1`` the bad one. Each step is one
comparison (reference = the nearest build known to be like the good end, candidate = the build under
test), answered by whoever runs it (runner.py: a pytest session) with one of Pinpoint's outcomes:

- ``different``: the candidate regressed against the reference: the change is at or before it;
- ``same``: equivalent: the change is after it;
- ``unknown``: inconclusive: the step is run again with more units (``attempt`` + 1, up to
  ``max_attempts``), then the build is left undecided and the search goes around it;
- ``skip``: a build failed to materialize or to start: named, and searched around, never called bad.

How a halving step is judged (``rule``): ``resemble`` (the default) asks which end the candidate resembles.
The ends' own measured change D̂ (its :class:`Reading`, log scale) is the yardstick: with x the step's
change, z = (x − D̂/2) / √(se² + se_D²/4); |z| < ``z_retry`` runs the step again with twice the units, then
the sign of z decides (bad-like: ``different``). ``verdict`` is the rule before issue 56: "same" only when the
step rules out the fixed ``detect`` (3%), which a step holding most of a 3% change can do (H200 lease 6, step 6
read ×0.984 [0.975, 0.994] and was called same). The ends and the confirmation keep the comparison's own
verdict under both rules: that is what holds wrong culprits down (experiments/bisect/simulate_bisect.out.md).
With ``size_steps`` each halving and the confirmation run enough units for the ends' measured change
(``Step.scale``): a halving for |D̂|/2 at ``target_z`` standard errors, the confirmation for ``confirm_power``
at |D̂| beyond ``ignore``.

Both ends are compared first (mozregression: make sure the good end is good and the bad one bad, here
that the regression reproduces on this machine); the culprit pair is compared once more at the end
(Pinpoint's sandwich). A build is reported as the first slower one only when it and the last good one
are neighbours (nothing between them but skipped or undecided builds means a range) and that last
comparison says ``different``; anything else ends "unknown between X and Y", never in a wrong culprit.
The GPU-time budget is checked before every step against what the steps so far cost. The data a step and
its answer carry are in steps.py (re-exported here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from statistics import NormalDist
from typing import Any

from pytest_llmbench.bisect.steps import (
    OUTCOMES,
    STATES,
    Finding,
    Reading,
    Step,
    StepResult,
    ahead,
    max_comparisons,
    pick_middle,
    reading_of,
    resemblance,
)

#: halving-step rules: which end a step resembles (issue 56), or the comparison's verdict against ``detect``
RULES = ("resemble", "verdict")
DEFAULT_RULE = "resemble"
#: |z| below this: the step is run again with twice the units before its sign decides
Z_RETRY = 1.0
#: a sized halving step aims at |D̂|/2 = this many standard errors of z (simulate_bisect.py chose it)
TARGET_Z = 3.0
#: the power a sized confirmation has at the ends' measured change (its verdict is the comparison's own)
CONFIRM_POWER = 0.99
#: no step runs more than this many times the first attempt's units (retries double on top)
MAX_SCALE = 16.0


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
        rule: str = DEFAULT_RULE,
        z_retry: float = Z_RETRY,
        size_steps: bool = True,
        target_z: float = TARGET_Z,
        confirm_power: float = CONFIRM_POWER,
        ignore: float = 0.01,
        detect: float = 0.03,
        confirm_alpha: float = 0.05,
        max_scale: float = MAX_SCALE,
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
        if rule not in RULES:
            raise ValueError(f"rule {rule!r}: one of {', '.join(RULES)}")
        if max_scale < 1:
            raise ValueError(f"max_scale must be >= 1, got {max_scale}")
        self.rule = rule
        self.z_retry = z_retry
        self.size_steps = size_steps
        self.target_z = target_z
        self.confirm_power = confirm_power
        #: the confirmation's ``ignore`` on the log scale and its one-sided alpha: what sizing it must beat
        self.ignore = math.log1p(ignore)
        #: the change the ends must not miss: an ends step that is not ``different`` is run once more with
        #: ``confirm_power`` at it (sized steps only)
        self.detect = math.log1p(detect)
        self.confirm_alpha = confirm_alpha
        self.max_scale = max_scale
        #: the ends' reading (the yardstick of ``resemble``) and the units it was measured at
        self.ends: Reading | None = None
        self._ends_units = 1.0
        self.states = ["untested"] * n
        self.reasons: dict[int, str] = {}
        self.steps: list[tuple[Step, StepResult]] = []

    # --- cost -----------------------------------------------------------------------------------------

    @property
    def spent(self) -> float:
        """Device time this run has used (steps replayed from a record cost it nothing)."""
        return sum(r.seconds for _, r in self.steps if not r.replayed)

    def expected(self, attempt: int, scale: float = 1.0) -> float:
        """A step's cost, predicted from the first attempts so far per unit of ``Step.units`` (retries run
        twice the units each, a sized step ``scale`` times).

        From their sessions alone: a build that took 5 minutes to materialize is cached for every later step,
        and counting it would refuse the retry an inconclusive ends step needs (it did, on the H200)."""
        firsts = [
            (r.seconds - r.build_seconds) / s.units for s, r in self.steps if s.attempt == 0 and r.outcome != "skip"
        ]
        if not firsts:
            return 0.0
        return sum(firsts) / len(firsts) * scale * 2**attempt

    def _fits(self, attempt: int, scale: float = 1.0) -> bool:
        if self.budget_s is None:
            return True
        return self.spent + self.expected(attempt, scale) <= self.budget_s

    # --- sizing and judging ---------------------------------------------------------------------------

    def _unit_variance(self) -> float | None:
        """The ends' variance of one unsized step (se² × the units it ran), or None before a reading."""
        if self.ends is None:
            return None
        return self.ends.se**2 * self._ends_units

    def _scale_for(self, se_wanted: float) -> float:
        v = self._unit_variance()
        if not self.size_steps or v is None:
            return 1.0
        if se_wanted <= 0:
            return self.max_scale
        return min(max(v / se_wanted**2, 1.0), self.max_scale)

    def _sizing_change(self) -> float:
        """The ends' change one SE below its estimate: steps sized for it are not undersized by an ends
        reading that happened to run high (the ends pass more often when they do)."""
        assert self.ends is not None
        return max(self.ends.change - self.ends.se, self.ends.change / 2)

    def halving_scale(self) -> float:
        """Units for a halving step: |D̂|/2 at ``target_z`` standard errors of z (se² + se_D²/4)."""
        if self.ends is None or self.rule != "resemble":
            return 1.0
        room = (self._sizing_change() / (2 * self.target_z)) ** 2 - self.ends.se**2 / 4
        return self._scale_for(math.sqrt(room) if room > 0 else 0.0)

    def yardstick_scale(self) -> float | None:
        """Units for one more good-vs-bad comparison when the ends' SE alone would use more than half of a
        halving's z budget (se_D/2 > |D̂|/(2·target_z·√2)); None when the ends are precise enough."""
        if self.ends is None or self.rule != "resemble" or not self.size_steps:
            return None
        wanted = self._sizing_change() / (self.target_z * math.sqrt(2))
        if self.ends.se <= wanted:
            return None
        # pooled 1/se² = 1/se_D² + 1/se_more²  →  se_more for the pooled SE to reach ``wanted``
        more = 1 / wanted**2 - 1 / self.ends.se**2
        return self._scale_for(1 / math.sqrt(more))

    def confirm_scale(self) -> float:
        """Units for the confirmation: ``confirm_power`` at the ends' change beyond ``ignore`` (its own verdict)."""
        if self.ends is None or not self.size_steps:
            return 1.0
        return self._scale_for(self._power_se(self._sizing_change()))

    def _power_se(self, change: float) -> float:
        """The SE at which a change of ``change`` (log) is called regressed beyond ``ignore`` with ``confirm_power``."""
        z = NormalDist().inv_cdf(1 - self.confirm_alpha) + NormalDist().inv_cdf(self.confirm_power)
        return (change - self.ignore) / z

    def _run_ends(self, good: int, bad: int) -> StepResult:
        """The ends; sized, one that is not ``different`` (same or unknown) runs once more with the units for
        ``confirm_power`` at ``detect`` (its first attempt measured the spread): a 3% change read as
        equivalent by 30 units of SE 1% (4% of the time) is not the last word. Unsized: retries as any step."""
        if not (self.size_steps and self.rule == "resemble") or self.max_attempts < 2:
            return self._run("ends", good, bad)
        first = self._run("ends", good, bad, attempts=1)
        if first.outcome in ("different", "skip"):
            return first
        if first.reading is None:  # nothing to size from: an unknown retries as any step
            return self._run("ends", good, bad, prior=first) if first.outcome == "unknown" else first
        units = self.steps[-1][0].units
        wanted = self._power_se(self.detect)
        scale = min(max(first.reading.se**2 * units / wanted**2, 2.0), self.max_scale * 2) / 2  # units = scale × 2
        step = Step(len(self.steps) + 1, "ends", good, bad, 1, scale)
        if not self.recorded(step) and not self._fits(1, scale):
            return first
        result = self._compare(step)
        self.steps.append((step, result))
        if self.on_step is not None:
            self.on_step(step, result)
        return result

    def _refine_ends(self, good: int, bad: int) -> None:
        """The ``yardstick`` step: good against bad once more at the units :meth:`yardstick_scale` asks for, its
        reading pooled with the ends' (inverse-variance) as the yardstick of every halving. Its own verdict
        changes nothing (the ends decided); a budget that cannot hold it, or a failed run, leaves the ends' reading."""
        scale = self.yardstick_scale()
        if scale is None or self.ends is None:
            return
        step = Step(len(self.steps) + 1, "yardstick", good, bad, 0, scale)
        if not self.recorded(step) and not self._fits(0, scale):
            return
        result = self._compare(step)
        self.steps.append((step, result))
        if self.on_step is not None:
            self.on_step(step, result)
        r = result.reading
        if result.outcome == "skip" or r is None:
            return
        w1, w2 = 1 / self.ends.se**2, 1 / r.se**2
        self.ends = Reading((self.ends.change * w1 + r.change * w2) / (w1 + w2), math.sqrt(1 / (w1 + w2)))

    def _judge_halving(self, step: Step, result: StepResult, final: bool) -> StepResult:
        """``resemble``: the step's outcome by which end it resembles (the session's own verdict kept in details)."""
        if self.rule != "resemble" or self.ends is None or result.reading is None or result.outcome == "skip":
            return result
        z = resemblance(result.reading, self.ends)
        details = {**result.details, "z": z, "session_outcome": result.outcome}
        if abs(z) < self.z_retry and not final:
            outcome, reason = "unknown", f"between the ends (z {z:+.2f}): again with twice the units"
        else:
            outcome = "different" if z > 0 else "same"
            reason = f"resembles the {'bad' if z > 0 else 'good'} end (z {z:+.2f})"
        return replace(result, outcome=outcome, reason=reason, details=details)

    # --- steps ----------------------------------------------------------------------------------------

    def _run(
        self,
        kind: str,
        reference: int,
        candidate: int,
        scale: float = 1.0,
        judge: Callable[[Step, StepResult, bool], StepResult] | None = None,
        attempts: int | None = None,
        prior: StepResult | None = None,
    ) -> StepResult:
        """One comparison, repeated with more units while it is unknown; :class:`_Budget` when it cannot run.

        ``judge(step, result, final)`` may re-read a result before it is recorded (``final``: no retry follows)."""
        result = prior  # a first attempt already run (the ends, sized): go on from the next
        for attempt in range(1 if prior is not None else 0, attempts or self.max_attempts):
            step = Step(len(self.steps) + 1, kind, reference, candidate, attempt, scale)
            # the first step always runs: it measures the cost (after a resume, the replayed steps priced it)
            if self.steps and not self.recorded(step) and not self._fits(attempt, scale):
                if result is not None:
                    return result  # an unknown that could not be topped up stays unknown
                raise _Budget()
            result = self._compare(step)
            if judge is not None:
                nxt = Step(step.number + 1, kind, reference, candidate, attempt + 1, scale)
                cost = 0.0 if result.replayed else result.seconds  # not in self.spent yet
                fits = self.budget_s is None or self.spent + cost + self.expected(attempt + 1, scale) <= self.budget_s
                final = attempt + 1 >= self.max_attempts or not (self.recorded(nxt) or fits)
                result = judge(step, result, final)
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
        ends = self._run_ends(good, bad)
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
        last_ends = self.steps[-1][0]
        if ends.reading is not None and ends.reading.change > 0:
            self.ends, self._ends_units = ends.reading, last_ends.units
        lo, hi = good, bad
        try:
            self._refine_ends(good, bad)
            while (mid := pick_middle(lo, hi, self.states)) is not None:
                self._announce([lo], (lo, hi))
                r = self._run("bisect", lo, mid, self.halving_scale(), self._judge_halving)
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
            confirm = self._run("confirm", lo, hi, self.confirm_scale())
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
    "DEFAULT_RULE",
    "OUTCOMES",
    "RULES",
    "STATES",
    "Finding",
    "Reading",
    "Search",
    "Step",
    "StepResult",
    "ahead",
    "bisect",
    "max_comparisons",
    "pick_middle",
    "reading_of",
    "resemblance",
]
