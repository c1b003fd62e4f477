"""How many rounds a comparison runs: warm-up, a pilot that measures the spread, then enough for 95% power.

The design is Stein's two-stage t test (Stein 1945), per scenario:

1. ``warmup_rounds`` ABBA rounds that are run and recorded but never judged (the first blocks after a
   server start measured the opposite sign of the later ones on an H200: issue 20);
2. ``pilot_rounds`` rounds; their per-round spread ``s`` (``df = pilot - 1``) is each timing metric's
   :class:`~pytest_llmbench.compare.stats.Spread`;
3. ``N = max(pilot, ceil(s² (t_α,df + t_β,df)² / Δ²))`` rounds in all, Δ the distance from ``ignore`` to
   ``detect`` on the log scale, the largest N over the deciding metrics, capped by ``max_rounds`` and the
   time budget (``budget_s``, from the first warm-up block on).

The final test uses the pilot's ``s`` and ``df`` with the mean of all N rounds. Sample means are independent
of sample variances for normal data, so N (a function of the pilot's variances alone) tells the test
nothing about the means, and the statistic is exactly t with the pilot's df: the false-alarm rate at
``ignore`` is exactly alpha, and the power at ``detect`` is at least 95% whatever the true spread (Stein's
bound), not only when the pilot guessed it well. Reusing the pilot's rounds with the *final* variance
(an internal pilot) is slightly liberal: benches/perf/compare/simulate_comparisons.py measures both.

No look before the last can stop the rounds, so no alpha is spent on looks that cannot decide, and the
printed interval is the nominal 95% one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from scipy import stats

from pytest_llmbench.compare.margins import RATIO, Sizes
from pytest_llmbench.compare.stats import POWER, Spread, scale

MIN_ROUNDS = 2  # below this a round metric has no spread at all


def even_below(n: int) -> int:
    """Rounds come in ABBA pairs: with an odd count the arm that went first once more carries the
    first-in-round effect into the mean (an A/A on 2 cores read "improved" twice over 3 rounds)."""
    return max(MIN_ROUNDS, n - n % 2)


@dataclass(frozen=True)
class Design:
    """The rounds of one scenario's comparison."""

    warmup_rounds: int = 1
    pilot_rounds: int = 12
    max_rounds: int = 400
    budget_s: float | None = 300.0
    power: float = POWER

    def __post_init__(self) -> None:
        if self.warmup_rounds < 0:
            raise ValueError(f"warm-up rounds must be >= 0, got {self.warmup_rounds}")
        if self.pilot_rounds < 3:
            raise ValueError(f"a pilot needs >= 3 rounds (2 degrees of freedom), got {self.pilot_rounds}")
        if self.max_rounds < MIN_ROUNDS:
            raise ValueError(f"max rounds must be >= {MIN_ROUNDS}, got {self.max_rounds}")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"the budget must be > 0 seconds, got {self.budget_s}")
        if not 0.5 <= self.power < 1:
            raise ValueError(f"power must be in [0.5, 1), got {self.power}")

    @property
    def pilot(self) -> int:
        """The pilot's rounds: an even number (whole ABBA pairs), at most ``max_rounds``."""
        return even_below(min(self.pilot_rounds, self.max_rounds))

    def describe(self) -> str:
        budget = f"{self.budget_s:g} s" if self.budget_s else "no time limit"
        return (
            f"{self.warmup_rounds} warm-up round(s) not judged, a {self.pilot}-round pilot, then the rounds "
            f"for {100 * self.power:g}% power at each metric's detect size (at most {self.max_rounds} rounds, "
            f"{budget} per scenario)"
        )


def distance(sizes: Sizes, higher_is_better: bool) -> float:
    """From ``ignore`` to ``detect`` in the worse direction, on the tested scale (log ratio or difference)."""
    return abs(
        scale(sizes.kind, sizes.detect, True, higher_is_better)
        - scale(sizes.kind, sizes.ignore, True, higher_is_better)
    )


def rounds_for(spread: Spread, *, sizes: Sizes, alpha: float, higher_is_better: bool, power: float = POWER) -> int:
    """Stein's second-stage size: the rounds (pilot included) for ``power`` at ``detect``."""
    if spread.df < 1:
        raise ValueError(f"a spread needs >= 1 degree of freedom, got {spread.df}")
    if spread.sd == 0:
        return spread.df + 1
    reach = float(stats.t.isf(alpha, spread.df) + stats.t.isf(1 - power, spread.df))
    return max(spread.df + 1, math.ceil((reach * spread.sd / distance(sizes, higher_is_better)) ** 2))


@dataclass(frozen=True)
class Need:
    """One deciding metric's pilot: its spread and the rounds it needs."""

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
        why = f"~{need.rounds} rounds for {need.detect_text()} at the measured {need.sd_text()} SD ({need.metric})"
        if self.underpowered:
            return f"underpowered: needs {why}; the budget allows {self.limit}"
        return f"{self.rounds} rounds: {why}"


def plan_rounds(needs: list[Need], *, design: Design, pilot: int, seconds_per_round: float, elapsed_s: float) -> Plan:
    """The rounds to run after a pilot of ``pilot`` rounds that took ``seconds_per_round`` each."""
    limit = design.max_rounds
    if design.budget_s is not None and seconds_per_round > 0:
        left = design.budget_s - elapsed_s
        limit = min(limit, pilot + max(0, int(left // seconds_per_round)))
    limit = even_below(max(limit, pilot))
    needed = max((n.rounds for n in needs), default=pilot)
    rounds = min(max(needed + needed % 2, pilot), limit)
    return Plan(
        rounds=rounds,
        limit=limit,
        pilot=pilot,
        seconds_per_round=seconds_per_round,
        needs=tuple(needs),
        spreads={n.metric: n.spread for n in needs},
    )
