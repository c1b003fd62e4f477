"""How many rounds a comparison runs: warm-up, a pilot that measures the spread, then enough for 95% power.

The unit of every timing test is one **server pair**: both arms' servers started afresh, then
``restart_rounds`` ABBA rounds on them (two by default: A B | B A). Two starts of one build differ by more
than their rounds do (an A/A on 2 cores read ×1.050 TPOT at ±1.6% once in 20 sessions, the two processes
of one build staying apart for the whole session), so a difference between instances is noise that rounds
on one pair of servers cannot see; restarting both arms for every unit puts it in the error term, where
the test accounts for it (Pinpoint repeats whole isolated runs for the same reason). When only one arm is
up at a time (per-block servers) every block is a fresh start already and the round is the unit.

The design is Stein's two-stage t test (Stein 1945), per scenario:

1. ``warmup_rounds`` ABBA rounds that are run and recorded but never judged (the first blocks after a
   server start measured the opposite sign of the later ones on an H200: issue 20);
2. a pilot of ``pilot_units`` units (never fewer than ``MIN_UNITS``, whatever the budget: below
   ``stats.MIN_DF`` degrees of freedom nothing is decided); their spread ``s`` (``df = units - 1``) is each
   timing metric's :class:`~pytest_llmbench.compare.stats.Spread`;
3. ``N = max(pilot, ceil(s² c² / Δ²))`` units in all, Δ the distance from ``ignore`` to ``detect`` on
   the log scale, the largest N over the deciding metrics, capped by ``max_rounds`` and the time budget
   (``budget_s``, from the first warm-up block on). Stein's ``c = t_α,df + t_β,df`` gives Stein's test
   its power exactly, but the verdict needs the final-SD t to agree too, and that rule had 94.6% at
   Stein's size (issue 55); ``c`` is raised until the rule itself has the power (:func:`reach`).

The final test decides only where two t tests on the mean of all N units agree: Stein's (the pilot's
``s`` and ``df``) and the one on the final SD of the N units (df N - 1). Sample means are independent of
sample variances for normal data, so N (a function of the pilot's variances alone) tells Stein's test
nothing about the means: its false-alarm rate at ``ignore`` is exactly alpha, and needing the second test
too can only lower it. The second test is what a bad minute after the pilot meets: an outlier unit moves
the mean, and with the pilot's SD alone it moved the verdict (2% of units at ±20–70%: 6.6% regressed at
exactly ``ignore``, docs/COMPARE_STATS.md "The final test"). experiments/compare/simulate_comparisons.py
measures the rates under normal, t(3), contaminated and drifting noise.

No look before the last can stop the rounds, so no alpha is spent on looks that cannot decide, and the
printed interval is the nominal 95% one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from pytest_llmbench.compare.margins import RATIO, Sizes
from pytest_llmbench.compare.stats import DEPENDENCE_LEVEL, MIN_DF, POWER, Spread, scale

MIN_ROUNDS = 2  # below this a round metric has no spread at all
MIN_UNITS = MIN_DF + 1  # the fewest units a verdict stands on; no budget cuts a pilot below it


def whole_units(rounds: int, unit_rounds: int) -> int:
    """``rounds`` cut down to whole units (at least two) and whole ABBA pairs."""
    step = max(2, unit_rounds)
    return max(2 * unit_rounds, MIN_ROUNDS, rounds - rounds % step)


@dataclass(frozen=True)
class Design:
    """The rounds of one scenario's comparison."""

    warmup_rounds: int = 1
    pilot_units: int = 12
    max_rounds: int = 400
    budget_s: float | None = 300.0
    power: float = POWER
    #: Rounds per server pair while both arms stay up (0: never restart them within a scenario; None: chosen
    #: by cost once the first pair's start and rounds are timed, compare/plan.py).
    restart_rounds: int | None = 2
    #: The plan's noise before the pilot measures it (None restart_rounds): a pair's offset SD and a round's
    #: SD on the log scale. Only the unit's length and the up-front table use them; the pilot's units decide.
    prior_sd_between: float = 0.01
    prior_sd_within: float = 0.035
    #: The budget is a cap: a pilot that cannot reach ``MIN_UNITS`` units within it stops and says "budget too
    #: small to judge". True (``--llmbench-compare-floor``): the floor is played whatever the budget.
    force_floor: bool = False

    def __post_init__(self) -> None:
        if self.warmup_rounds < 0:
            raise ValueError(f"warm-up rounds must be >= 0, got {self.warmup_rounds}")
        if self.pilot_units < MIN_UNITS:
            raise ValueError(
                f"a pilot needs >= {MIN_UNITS} units ({MIN_DF} degrees of freedom), got {self.pilot_units}"
            )
        if self.restart_rounds is not None and (self.restart_rounds < 0 or self.restart_rounds % 2):
            raise ValueError(
                f"rounds per server pair must be 0 (never restart) or even (whole ABBA pairs), "
                f"got {self.restart_rounds}"
            )
        if self.max_rounds < MIN_ROUNDS:
            raise ValueError(f"max rounds must be >= {MIN_ROUNDS}, got {self.max_rounds}")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"the budget must be > 0 seconds, got {self.budget_s}")
        if not 0.5 <= self.power < 1:
            raise ValueError(f"power must be in [0.5, 1), got {self.power}")

    @property
    def halves_fit(self) -> bool:
        """Can a unit be two halves of whole ABBA pairs, the arms swapping sets between them (the disjoint
        placements)? Yes where the unit is chosen by cost, or is a multiple of 4 rounds (not 0: one pair)."""
        rounds = self.restart_rounds
        return rounds is None or (rounds > 0 and rounds % 4 == 0)

    @property
    def planned_unit(self) -> bool:
        """Is the unit's length chosen by cost (compare/plan.py) once the first pair is timed?"""
        return self.restart_rounds is None

    def unit_rounds(self, keep_both: bool) -> int:
        """Rounds per unit of the tests: a server pair's rounds, or 1 where every block starts its server
        (per-block servers) or the arms are never restarted. A unit chosen by cost starts as one ABBA pair
        (its first pair of rounds is what times it)."""
        if not keep_both or self.restart_rounds == 0:
            return 1
        return self.restart_rounds or MIN_ROUNDS

    def pilot(self, unit_rounds: int = 1) -> int:
        """The pilot's rounds: whole units and whole ABBA pairs, at most ``max_rounds``."""
        return whole_units(min(self.pilot_units * unit_rounds, self.max_rounds), unit_rounds)

    def floor(self, unit_rounds: int = 1) -> int:
        """The rounds the pilot runs whatever the budget: ``MIN_UNITS`` units in whole ABBA pairs (fewer only
        where ``max_rounds`` says so, and then nothing is decided)."""
        return min(self.pilot(unit_rounds), whole_units(MIN_UNITS * unit_rounds, unit_rounds))

    def describe(self, keep_both: bool = True, session_budget_s: float | None = None) -> str:
        budget = f"{self.budget_s:g} s per scenario" if self.budget_s else "no time limit per scenario"
        if session_budget_s is not None:
            budget = f"{session_budget_s:g} s for the session's scenarios"
        unit = self.unit_rounds(keep_both)
        pilot = self.pilot(unit) // unit
        if keep_both and self.planned_unit:
            plan = (
                "units of a fresh pair of servers whose rounds are chosen by cost once the first pair is timed, "
                f"a pilot of up to {self.pilot_units} units, then the units"
            )
        elif unit > 1:
            plan = f"units of {unit} rounds on a fresh pair of servers, a {pilot}-unit pilot, then the units"
        else:
            plan = f"a {pilot}-round pilot, then the rounds"
        return (
            f"{self.warmup_rounds} warm-up round(s) not judged, {plan} for {100 * self.power:g}% power at each "
            f"metric's detect size (at most {self.max_rounds} rounds, {budget})"
        )


def distance(sizes: Sizes, higher_is_better: bool) -> float:
    """From ``ignore`` to ``detect`` in the worse direction, on the tested scale (log ratio or difference)."""
    return abs(
        scale(sizes.kind, sizes.detect, True, higher_is_better)
        - scale(sizes.kind, sizes.ignore, True, higher_is_better)
    )


def units_for(spread: Spread, *, sizes: Sizes, alpha: float, higher_is_better: bool, power: float = POWER) -> int:
    """The units (pilot included) for ``power`` at ``detect`` under the rule that decides: Stein's t and
    the final-SD t must both reject (:func:`reach`), and the units must not be flagged as dependent.
    Stein's size alone gave that rule 94.6% power (issue 55)."""
    if spread.df < 1:
        raise ValueError(f"a spread needs >= 1 degree of freedom, got {spread.df}")
    if spread.sd == 0:
        return spread.df + 1
    gap = distance(sizes, higher_is_better)
    # the dependence check (stats.dependence) flags independent units at DEPENDENCE_LEVEL, and a flagged
    # comparison may lose its verdict: planning for power + that level keeps the power of what is left
    c = reach(spread.df, alpha, min(power + DEPENDENCE_LEVEL, 0.999), _rounded(spread.sd / gap))
    return max(spread.df + 1, math.ceil((c * spread.sd / gap) ** 2))


def _rounded(x: float) -> float:
    """Two significant digits: the planner's reach depends on the noise-to-gap ratio only through the
    final t's degrees of freedom, so nearby ratios share one (cached) answer."""
    return float(f"{x:.2g}")


_U = (np.arange(160) + 0.5) / 160  # quantile midpoints: the pilot's variance ratio
_V = (np.arange(64) + 0.5) / 64  # and the later units' sum of squares


def intersection_power(c: float, df: int, alpha: float, ratio: float) -> float:
    """The power at ``detect`` of the two-test rule when units are planned as ``N = max(df + 1,
    ceil(c² s² / Δ²))`` from a pilot of ``df + 1`` units with SD ``s``, under normal noise whose SD is
    ``ratio``·Δ (Δ: ignore → detect on the tested scale).

    With u = s²/σ² (χ²_df/df), the standardized mean is Z + √N/ratio; Stein's test rejects above
    t_α,df·√u, the final t above t_α,N−1 times the final SD over σ, whose sum of squares is df·u plus an
    independent χ²_(N−1−df) (the later units' own and the stages' difference). Both must reject; the
    power is the mean of Φ over quantile grids of u and of that χ²."""
    u = np.asarray(stats.chi2.ppf(_U, df), dtype=float) / df
    n = np.asarray(np.maximum(df + 1, np.ceil(c * c * u * ratio * ratio)), dtype=float)
    extra = n - 1 - df
    v = np.where(extra[:, None] > 0, stats.chi2.ppf(_V[None, :], np.maximum(extra, 1)[:, None]), 0.0)
    final_sd = np.sqrt((df * u[:, None] + v) / (n - 1)[:, None])
    final_t = np.asarray(stats.t.isf(alpha, n - 1), dtype=float)
    bar = np.maximum(stats.t.isf(alpha, df) * np.sqrt(u)[:, None], final_t[:, None] * final_sd)
    return float(np.mean(stats.norm.cdf(np.sqrt(n)[:, None] / ratio - bar)))


@functools.lru_cache(maxsize=4096)
def reach(df: int, alpha: float, power: float, ratio: float) -> float:
    """The multiplier ``c`` of the planned size ``c² s² / Δ²`` that gives the two-test rule ``power``
    (:func:`intersection_power`): Stein's ``t_α,df + t_β,df`` (exact for Stein's test alone) raised until
    the rule, not Stein's test, has it."""
    stein = float(stats.t.isf(alpha, df) + stats.t.isf(1 - power, df))
    if intersection_power(stein, df, alpha, ratio) >= power:
        return stein
    high = stein * 1.1
    while intersection_power(high, df, alpha, ratio) < power and high < 4 * stein:
        high *= 1.1
    return float(optimize.brentq(lambda c: intersection_power(c, df, alpha, ratio) - power, stein, high, xtol=1e-4))


@dataclass(frozen=True)
class Need:
    """One deciding metric's pilot: its spread (per unit) and the rounds it needs (whole units)."""

    metric: str
    spread: Spread
    sizes: Sizes
    rounds: int

    def sd_text(self) -> str:
        return f"{100 * self.spread.sd:.2g}%" if self.sizes.kind == RATIO else f"{self.spread.sd:.3g}"

    def detect_text(self) -> str:
        return f"{100 * self.sizes.detect:.3g}%" if self.sizes.kind == RATIO else f"{self.sizes.detect:.3g}"


@dataclass(frozen=True)
class Plan:
    """What the pilot decided: ``rounds`` to run in all (pilot included), and why."""

    rounds: int
    limit: int  # what max_rounds and the budget allow
    pilot: int
    seconds_per_round: float
    needs: tuple[Need, ...] = ()
    spreads: Mapping[str, Spread] = field(default_factory=dict)
    unit_rounds: int = 1  # rounds per unit (server pair) of the tests

    @property
    def needed(self) -> int:
        return max((n.rounds for n in self.needs), default=self.pilot)

    @property
    def underpowered(self) -> bool:
        return self.needed > self.limit

    def binding(self) -> Need | None:
        """The metric that needs the most rounds."""
        return max(self.needs, key=lambda n: n.rounds, default=None)

    def describe(self) -> str:
        need = self.binding()
        if need is None:
            return f"{self.rounds} rounds (no metric judged per round: the pilot alone)"
        per = f" per server pair of {self.unit_rounds} rounds" if self.unit_rounds > 1 else ""
        why = f"~{need.rounds} rounds for {need.detect_text()} at the measured {need.sd_text()} SD{per} ({need.metric})"
        if self.underpowered:
            return f"underpowered: needs {why}; the budget allows {self.limit}"
        return f"{self.rounds} rounds: {why}"


def plan_rounds(
    needs: list[Need],
    *,
    design: Design,
    pilot: int,
    seconds_per_round: float,
    elapsed_s: float,
    unit_rounds: int = 1,
) -> Plan:
    """The rounds to run after a pilot of ``pilot`` rounds that took ``seconds_per_round`` each (server
    restarts included), in whole units of ``unit_rounds``."""
    limit = design.max_rounds
    if design.budget_s is not None and seconds_per_round > 0:
        left = design.budget_s - elapsed_s
        limit = min(limit, pilot + max(0, int(left // seconds_per_round)))
    limit = whole_units(max(limit, pilot), unit_rounds)
    needed = max((n.rounds for n in needs), default=pilot)
    step = max(2, unit_rounds)
    rounds = min(max(-(-needed // step) * step, pilot), limit)
    return Plan(
        rounds=rounds,
        limit=limit,
        pilot=pilot,
        seconds_per_round=seconds_per_round,
        needs=tuple(needs),
        spreads={n.metric: n.spread for n in needs},
        unit_rounds=unit_rounds,
    )
