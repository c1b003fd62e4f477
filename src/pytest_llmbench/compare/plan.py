"""The comparison's plan as data: how many rounds per server pair, how many pairs, and what that costs.

Why: every default of the comparison was tuned on a server that starts in 0.6-0.8 s. An engine that loads
a 27B model and captures CUDA graphs starts in minutes, and then two rounds per fresh pair (the shipped
unit) spend almost every GPU-second on starts. This module chooses the unit by cost.

The model (all on the log-ratio scale of one metric, candidate against reference):

    y_ur = delta + o_u + e_ur

``u`` a unit (a fresh pair of servers: both arms restarted), ``r`` one of its ``m`` ABBA rounds; ``o_u`` the
offset of that pair of processes (SD ``sd_between``: two starts of one build differ), ``e_ur`` the round's
noise (SD ``sd_within``). A unit's value (the mean of its rounds' log ratios) has variance
``sd_between² + sd_within² / m`` whatever ``m`` is, so the test over units (the mean of the ``n`` units'
values, t on their SD with ``n - 1`` df) is exact at any ``m`` and any offset: the between-start variance
is in its error term. Only the cost changes with ``m``:

    seconds = n * (start_s + warmup_s + m * round_s)

and the classic optimal allocation (two-stage sampling: Cochran, *Sampling Techniques*, ch. 10) is
``m* = sqrt((start_s + warmup_s) * sd_within² / (round_s * sd_between²))``; :func:`plan` starts there and
searches whole ABBA pairs exactly, with the t test's power (noncentral t, df ``n - 1``), never below
:data:`MIN_UNITS` units.

Other layouts, and why they are not chosen here (docs/COMPARE_STATS.md "The unit chosen by cost" has the numbers):

- **both arms kept up** (one pair for the scenario, the round as the unit): the offset of that one pair is
  in every round and in none of the test's spread, so the test is biased by it; at ``sd_between > 0`` a
  change of exactly ``ignore`` is called regressed more often than alpha, the more so the more rounds
  (:func:`shared_offset_false_alarm` says by how much). At ``sd_between = 0`` the fresh-pair plan already
  converges to it: few units, many rounds each, but still :data:`MIN_UNITS` units so the test keeps its df
  and stays exact if the offset was not 0 after all.
- **one arm restarted per unit** (the reference kept up): each unit's offset is ``c_u - r0`` with the
  reference's ``r0`` shared by every unit, so the units are correlated and the same bias comes back at half
  the variance (a pair's offset variance is the sum of the two arms'): :func:`shared_offset_false_alarm`
  with ``shared_sd = sd_between / sqrt(2)``. It saves half the starts, not the bias.
- **per-block starts** (one arm on the GPU at a time): every block starts its server, so a round costs two
  starts and the round is the unit: the fresh-pair cost with ``m = 1`` (:func:`plan` with
  ``unit_rounds=1``). It is what a GPU that holds one arm must pay, never a choice.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, stats

from pytest_llmbench.compare.margins import RATIO, Sizes
from pytest_llmbench.compare.power import distance
from pytest_llmbench.compare.stats import POWER, scale, worsening
from pytest_llmbench.jsonl import iter_jsonl

#: No decision below this many units (df 3). Issue 37 introduces the comparison's own floor of degrees of
#: freedom; this is the planner's, and it must not be lower than that one.
MIN_UNITS = 4
#: Rounds come in ABBA pairs (compare/power.py: an odd count leaves one arm first once more).
ROUND_STEP = 2
#: The most rounds one pair of servers plays (the search's end when the offset is 0).
MAX_UNIT_ROUNDS = 400
#: The most units the search considers (a plan beyond this is reported as out of reach).
MAX_UNITS = 100_000


@dataclass(frozen=True)
class Costs:
    """Seconds one scenario's comparison spends: per unit on a fresh pair, and per round on it."""

    start_s: float  # both arms started for one unit (the sum of the two when one after the other)
    round_s: float  # one ABBA round: both blocks, flushes included
    warmup_s: float = 0.0  # the scenario's warmup requests on a fresh pair

    def __post_init__(self) -> None:
        for name in ("start_s", "round_s", "warmup_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"costs: {name} must be a finite number >= 0, got {value!r}")
        if self.round_s <= 0:
            raise ValueError(f"costs: round_s must be > 0, got {self.round_s!r}")

    @classmethod
    def of_arms(
        cls,
        reference_start_s: float,
        candidate_start_s: float,
        round_s: float,
        *,
        warmup_s: float = 0.0,
        concurrent: bool = False,
    ) -> Costs:
        """The unit's start from each arm's: one after the other (the runner today: two llama-server
        warm-ups on 2 cores took x3.2 as long at once) or at once (the longer of the two)."""
        both = max(reference_start_s, candidate_start_s) if concurrent else reference_start_s + candidate_start_s
        return cls(both, round_s, warmup_s)

    @property
    def unit_overhead_s(self) -> float:
        """What a fresh pair costs before its rounds."""
        return self.start_s + self.warmup_s

    def unit_s(self, unit_rounds: int) -> float:
        return self.unit_overhead_s + unit_rounds * self.round_s

    def seconds(self, units: int, unit_rounds: int) -> float:
        return units * self.unit_s(unit_rounds)


@dataclass(frozen=True)
class Noise:
    """The two SDs of the nested model, on the tested scale (log ratio for a ratio metric)."""

    sd_between: float  # a fresh pair's offset
    sd_within: float  # one round around its pair's offset

    def __post_init__(self) -> None:
        if not (self.sd_between >= 0 and self.sd_within >= 0 and math.isfinite(self.sd_between + self.sd_within)):
            raise ValueError(f"noise: SDs must be finite and >= 0, got {self.sd_between!r}, {self.sd_within!r}")
        if self.sd_between == 0 and self.sd_within == 0:
            raise ValueError("noise: both SDs are 0; nothing to plan (identical arms need one unit)")

    def unit_sd(self, unit_rounds: int) -> float:
        """The SD of one unit's value: the mean of its rounds' log ratios."""
        return math.sqrt(self.sd_between**2 + self.sd_within**2 / unit_rounds)


@dataclass(frozen=True)
class Target:
    """What the plan must reach: ``power`` at ``sizes.detect``, testing "no worse than ``sizes.ignore``"
    one-sided at ``alpha``."""

    sizes: Sizes
    alpha: float
    higher_is_better: bool = True
    power: float = POWER
    min_units: int = MIN_UNITS

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"target: alpha must be in (0, 0.5), got {self.alpha!r}")
        if not 0.5 <= self.power < 1:
            raise ValueError(f"target: power must be in [0.5, 1), got {self.power!r}")
        if self.min_units < MIN_UNITS:
            raise ValueError(f"target: at least {MIN_UNITS} units (df {MIN_UNITS - 1}), got {self.min_units}")

    @property
    def gap(self) -> float:
        """From ``ignore`` to ``detect`` on the tested scale."""
        return distance(self.sizes, self.higher_is_better)

    def at(self, detect: float) -> Target:
        """The same test, planned for another detect size."""
        return replace(self, sizes=Sizes(self.sizes.kind, self.sizes.ignore, detect))


def power_at(units: int, unit_rounds: int, noise: Noise, target: Target, gap: float | None = None) -> float:
    """The power of the unit-level t test (``units - 1`` df, known-SD plan) at a change ``gap`` beyond
    ``ignore`` on the tested scale (default: at ``detect``): the noncentral t, exact for normal units."""
    if units < 2:
        return 0.0
    gap = target.gap if gap is None else gap
    df = units - 1
    ncp = gap * math.sqrt(units) / noise.unit_sd(unit_rounds)
    return float(stats.nct.sf(stats.t.isf(target.alpha, df), df, ncp))


@functools.lru_cache(maxsize=4096)
def _reach(df: int, alpha: float, power: float) -> float:
    """The noncentrality at which a one-sided t at ``alpha`` with ``df`` rejects with ``power``."""
    crit = float(stats.t.isf(alpha, df))

    def short(ncp: float) -> float:
        return float(stats.nct.sf(crit, df, ncp)) - power

    high = crit + float(stats.norm.isf(1 - power)) + 1.0
    while short(high) < 0:
        high *= 2
    return float(optimize.brentq(short, 0.0, high, xtol=1e-10))


def gap_at(units: int, unit_rounds: int, noise: Noise, target: Target) -> float:
    """The smallest distance beyond ``ignore`` (tested scale) caught with the target's power."""
    if units < 2:
        return math.inf
    return _reach(units - 1, target.alpha, target.power) * noise.unit_sd(unit_rounds) / math.sqrt(units)


def detectable_at(units: int, unit_rounds: int, noise: Noise, target: Target) -> float:
    """The smallest worsening (the sizes' unit: 0.03 is 3%) caught with the target's power."""
    gap = gap_at(units, unit_rounds, noise, target)
    if not math.isfinite(gap):
        return math.inf
    start = scale(target.sizes.kind, target.sizes.ignore, True, target.higher_is_better)
    worse = start - gap if target.higher_is_better else start + gap
    return worsening(target.sizes.kind, worse, target.higher_is_better)


def units_needed(unit_rounds: int, noise: Noise, target: Target, max_units: int = MAX_UNITS) -> int | None:
    """The fewest units (at least ``target.min_units``) reaching the target at ``unit_rounds`` rounds per
    unit; None beyond ``max_units``."""
    return _units_needed([unit_rounds], noise, target, max_units)[0]


def _powers(units: np.ndarray, unit_sd: np.ndarray, target: Target) -> np.ndarray:
    df = units - 1.0
    return np.asarray(
        stats.nct.sf(stats.t.isf(target.alpha, df), df, target.gap * np.sqrt(units) / unit_sd), dtype=float
    )


def _units_needed(
    unit_rounds: Sequence[int], noise: Noise, target: Target, max_units: int = MAX_UNITS, window: int = 64
) -> list[int | None]:
    """:func:`units_needed` for many rounds-per-unit at once: the powers of a window of unit counts from the
    z plan up (the t test never needs fewer units than the z plan) in one vectorised call; a need beyond
    the window is found by doubling and bisection."""
    sd = np.array([noise.unit_sd(m) for m in unit_rounds], dtype=float)
    z = float(stats.norm.isf(target.alpha) + stats.norm.isf(1 - target.power))
    start = np.maximum(target.min_units, np.floor((z * sd / target.gap) ** 2)).astype(int)
    grid = start[:, None] + np.arange(window)[None, :]
    ok = _powers(grid.astype(float), np.repeat(sd[:, None], window, axis=1), target) >= target.power
    out: list[int | None] = []
    for i in range(len(unit_rounds)):
        hit = np.flatnonzero(ok[i])
        n: int | None = int(grid[i, hit[0]]) if hit.size else None
        if n is None:
            n = _units_by_bisection(int(grid[i, -1]), float(sd[i]), target, max_units)
        out.append(n if n is not None and n <= max_units else None)
    return out


def _units_by_bisection(lo: int, unit_sd: float, target: Target, max_units: int) -> int | None:
    """The fewest units above ``lo`` (which falls short) reaching the target's power."""

    def enough(n: int) -> bool:
        return bool(_powers(np.array([float(n)]), np.array([unit_sd]), target)[0] >= target.power)

    hi = 2 * lo
    while not enough(hi):
        lo, hi = hi, 2 * hi
        if hi > 2 * max_units:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def optimal_unit_rounds(costs: Costs, noise: Noise) -> float:
    """The classic allocation m* = sqrt(C_unit * sd_within² / (c_round * sd_between²)), large-sample (z)
    and continuous: the start of the exact search. Infinite when the offset is 0 (no reason to restart)."""
    if noise.sd_between == 0:
        return math.inf
    return math.sqrt(costs.unit_overhead_s * noise.sd_within**2 / (costs.round_s * noise.sd_between**2))


@dataclass(frozen=True)
class UnitPlan:
    """One scenario's comparison: ``units`` fresh pairs of ``unit_rounds`` rounds, what it costs, what it
    catches. ``reached`` is False where no plan within the limits reaches the target's power."""

    name: str
    units: int
    unit_rounds: int
    seconds: float
    detectable: float  # the smallest worsening caught with the target's power (sizes' unit)
    power: float  # at the target's detect
    target: Target
    reached: bool = True
    note: str = ""

    def describe(self) -> str:
        """One line of the plan table: "chat-1u: 12 units of 8 rounds, ~14 min, detects >= 3%"."""
        if self.units == 0:
            return f"{self.name}: not judged ({self.note})" if self.note else f"{self.name}: not judged"
        what = f"{self.units} units of {self.unit_rounds} round{'s' if self.unit_rounds != 1 else ''}"
        line = f"{self.name}: {what}, ~{duration(self.seconds)}, detects >= {_size(self.target.sizes, self.detectable)}"
        return line + (f" ({self.note})" if self.note else "")


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _size(sizes: Sizes, value: float) -> str:
    if not math.isfinite(value):
        return "nothing"
    return f"{100 * value:.2g}%" if sizes.kind == RATIO else f"{value:.3g}"


def _plan_of(name: str, units: int, m: int, costs: Costs, noise: Noise, target: Target, **kw: Any) -> UnitPlan:
    return UnitPlan(
        name,
        units,
        m,
        costs.seconds(units, m),
        detectable_at(units, m, noise, target),
        power_at(units, m, noise, target),
        target,
        **kw,
    )


def _round_choices(noise: Noise, target: Target, max_unit_rounds: int) -> list[int]:
    """Whole ABBA pairs from 2 up to the first ``m`` at which the floor of units reaches the target already
    (beyond it more rounds only cost more), at most ``max_unit_rounds``."""
    n = target.min_units
    room = (target.gap * math.sqrt(n) / _reach(n - 1, target.alpha, target.power)) ** 2 - noise.sd_between**2
    top = max_unit_rounds if room <= 0 else min(max_unit_rounds, math.ceil(noise.sd_within**2 / room))
    top = max(ROUND_STEP, top + (-top) % ROUND_STEP)
    return list(range(ROUND_STEP, min(top, max_unit_rounds) + 1, ROUND_STEP)) or [ROUND_STEP]


def plan(
    name: str,
    costs: Costs,
    noise: Noise,
    target: Target,
    *,
    unit_rounds: int | None = None,
    max_unit_rounds: int = MAX_UNIT_ROUNDS,
) -> UnitPlan:
    """The fewest seconds reaching the target's power at its detect size: rounds per unit (whole ABBA
    pairs, or ``unit_rounds`` when the layout fixes it: 1 for per-block starts) and units (at least
    ``target.min_units``), by exact search with the t test's power."""
    choices = [unit_rounds] if unit_rounds is not None else _round_choices(noise, target, max_unit_rounds)
    best: tuple[float, int, int] | None = None
    for m, n in zip(choices, _units_needed(choices, noise, target), strict=True):
        if n is not None and (best is None or costs.seconds(n, m) < best[0]):
            best = (costs.seconds(n, m), n, m)
    if best is None:
        m = choices[-1]
        return _plan_of(name, MAX_UNITS, m, costs, noise, target, reached=False, note="out of reach")
    return _plan_of(name, best[1], best[2], costs, noise, target)


def best_within(
    name: str,
    budget_s: float,
    costs: Costs,
    noise: Noise,
    target: Target,
    *,
    unit_rounds: int | None = None,
    max_unit_rounds: int = MAX_UNIT_ROUNDS,
) -> UnitPlan:
    """What a budget buys: the plan within ``budget_s`` seconds with the smallest detectable change (at the
    target's power). A budget that cannot hold ``target.min_units`` units of one ABBA pair gives a plan of 0
    units that says so."""
    choices = [unit_rounds] if unit_rounds is not None else range(ROUND_STEP, max_unit_rounds + 1, ROUND_STEP)
    best: tuple[float, int, int] | None = None
    for m in choices:
        n = int(budget_s // costs.unit_s(m))
        if n < target.min_units:
            break  # more rounds per unit only leave fewer units
        gap = gap_at(n, m, noise, target)
        if best is None or gap < best[0]:
            best = (gap, n, m)
    if best is None:
        floor = costs.seconds(target.min_units, choices[0])
        return UnitPlan(
            name,
            0,
            0,
            0.0,
            math.inf,
            0.0,
            target,
            reached=False,
            note=f"budget too small to judge: {target.min_units} units need ~{duration(floor)}",
        )
    _, n, m = best
    p = _plan_of(name, n, m, costs, noise, target)
    return replace(p, reached=p.power >= target.power)


def detectable_in(budget_s: float, costs: Costs, noise: Noise, target: Target) -> float:
    """The smallest detectable change a budget buys (the sizes' unit; inf if it cannot judge)."""
    return best_within("", budget_s, costs, noise, target).detectable


# --- a session budget across scenarios ---------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One scenario to plan: its name, costs, noise and target."""

    name: str
    costs: Costs
    noise: Noise
    target: Target


@dataclass(frozen=True)
class Allocation:
    """A session budget spent across scenarios: each one's plan, and the rule that set them."""

    budget_s: float
    plans: tuple[UnitPlan, ...]
    rule: str

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.plans)

    def table(self) -> list[str]:
        """The plan table printed before the first full unit."""
        head = f"plan for {duration(self.budget_s)} of budget ({self.rule}):"
        return [head, *(f"  {p.describe()}" for p in self.plans)]


def allocate(budget_s: float, scenarios: Sequence[Scenario], *, tolerance: float = 1e-4) -> Allocation:
    """Spend a session's budget across scenarios.

    When every scenario's plan for its own detect fits, each gets that plan (the rest is not spent: a gate
    stops when its power is reached). Otherwise every scenario is planned for one **common** detectable
    change (relative to its own target: the detect size scaled so that ``detect - ignore`` grows by the same
    factor everywhere), the smallest whose plans together fit the budget. Why not equal shares of seconds:
    a cheap scenario would buy more power than asked while an expensive one (a 120k-token prompt) detects
    nothing; a nightly gate wants one known blind spot across its matrix ("every scenario catches >= 4.5%"),
    and ``detect`` already says which changes matter equally. Each budget a scenario gets is then spent
    on its best plan within it (:func:`best_within`), so the shares sum to at most the budget. Scenarios
    whose :data:`MIN_UNITS` units do not fit are left out, most expensive first, and named.
    """
    if budget_s <= 0:
        raise ValueError(f"allocate: the budget must be > 0 seconds, got {budget_s!r}")
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names):
        raise ValueError(f"allocate: scenario names must be unique, got {names}")
    own = [plan(s.name, s.costs, s.noise, s.target) for s in scenarios]
    if all(p.reached for p in own) and sum(p.seconds for p in own) <= budget_s:
        return Allocation(budget_s, tuple(own), "each scenario's own detect")
    kept = list(scenarios)
    dropped: list[UnitPlan] = []

    def floor(s: Scenario) -> float:
        return s.costs.seconds(s.target.min_units, ROUND_STEP)

    while kept and sum(floor(s) for s in kept) > budget_s:
        worst = max(kept, key=floor)
        kept.remove(worst)
        dropped.append(
            UnitPlan(
                worst.name,
                0,
                0,
                0.0,
                math.inf,
                0.0,
                worst.target,
                reached=False,
                note=f"budget too small to judge: {worst.target.min_units} units need ~{duration(floor(worst))}",
            )
        )

    def scaled(s: Scenario, factor: float) -> Target:
        t = s.target
        gap = t.gap * factor
        start = scale(t.sizes.kind, t.sizes.ignore, True, t.higher_is_better)
        detect = worsening(t.sizes.kind, start - gap if t.higher_is_better else start + gap, t.higher_is_better)
        if t.sizes.kind == RATIO:
            detect = min(detect, 1 - 1e-9)
        return t.at(detect)

    def cost(factor: float) -> float:
        return sum(plan(s.name, s.costs, s.noise, scaled(s, factor)).seconds for s in kept)

    lo, hi = 1.0, 2.0
    while kept and cost(hi) > budget_s:
        lo, hi = hi, 2 * hi
        if hi > 1e6:
            break
    while kept and hi / lo > 1 + tolerance:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if cost(mid) > budget_s else (lo, mid)
    shares = [plan(s.name, s.costs, s.noise, scaled(s, hi)) for s in kept]
    spent = [best_within(s.name, p.seconds, s.costs, s.noise, s.target) for s, p in zip(kept, shares, strict=True)]
    order = {n: i for i, n in enumerate(names)}
    plans = sorted([*spent, *dropped], key=lambda p: order[p.name])
    return Allocation(budget_s, tuple(plans), f"shares that equalize the detectable change (x{hi:.2f} the gap)")


# --- how much noise lives between starts: a nested pilot ---------------------------------------------


@dataclass(frozen=True)
class Components:
    """The nested model's SDs as a pilot measured them, with their degrees of freedom."""

    sd_between: float
    sd_within: float
    df_between: int  # units - 1
    df_within: int  # rounds - units

    @property
    def noise(self) -> Noise:
        return Noise(self.sd_between, self.sd_within)


def components(units: Sequence[Sequence[float]]) -> Components:
    """One-way random-effects ANOVA by the method of moments (Searle, Casella & McCulloch, *Variance
    Components*, ch. 3). ``units`` holds each fresh pair's per-round values (log ratios); sd_within² is the
    mean square within units, sd_between² = (MSB - MSW) / n0 clipped at 0 (n0 the effective rounds per
    unit: the rounds, when the units are balanced)."""
    groups = [np.asarray(u, dtype=float) for u in units]
    if len(groups) < 2:
        raise ValueError(f"components: need >= 2 units, got {len(groups)}")
    if any(g.ndim != 1 or g.size < 1 for g in groups):
        raise ValueError("components: every unit needs a 1-d sequence of >= 1 round values")
    if any(not np.all(np.isfinite(g)) for g in groups):
        raise ValueError("components: round values must be finite")
    sizes = np.array([g.size for g in groups], dtype=float)
    total, k = float(sizes.sum()), len(groups)
    if total - k < 1:
        raise ValueError("components: need at least one unit with >= 2 rounds (no within-unit spread otherwise)")
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    msw = float(sum(((g - g.mean()) ** 2).sum() for g in groups)) / (total - k)
    msb = float((sizes * (means - grand) ** 2).sum()) / (k - 1)
    n0 = (total - float((sizes**2).sum()) / total) / (k - 1)
    between = max(0.0, (msb - msw) / n0)
    return Components(math.sqrt(between), math.sqrt(msw), k - 1, int(total) - k)


# --- the bias of a shared offset ---------------------------------------------------------------------


def shared_offset_false_alarm(
    shared_sd: float, unit_sd: float, units: int, target: Target, *, nodes: int = 80
) -> float:
    """The rate of "regressed" at a true change of exactly ``ignore`` when every unit shares one offset of
    SD ``shared_sd`` that the units' spread (``unit_sd``, the rest of each unit's noise) cannot see: both
    arms kept up for the scenario (the round as the unit, shared SD = sd_between) or one arm kept up
    (shared SD = sd_between / sqrt 2). alpha when the shared SD is 0; grows with ``units``. Exact: the
    noncentral t integrated over the offset (Gauss-Hermite)."""
    if units < 2:
        raise ValueError(f"shared_offset_false_alarm: need >= 2 units, got {units}")
    df = units - 1
    crit = float(stats.t.isf(target.alpha, df))
    if shared_sd == 0:
        return target.alpha
    x, w = np.polynomial.hermite_e.hermegauss(nodes)  # E[f(Z)] = sum w f(x) / sqrt(2 pi)
    ncp = x * shared_sd * math.sqrt(units) / unit_sd
    return float(np.sum(w * stats.nct.sf(crit, df, ncp)) / math.sqrt(2 * math.pi))


# --- costs and noise from a session's records ---------------------------------------------------------


@dataclass(frozen=True)
class RecordedCosts:
    """What a previous session's records say one (config, scenario) costs, and how often each was seen."""

    config: str
    scenario: str
    start_s: Mapping[str, float]  # median seconds per start, per role (reference, candidate)
    starts: Mapping[str, int]
    round_s: float  # median over judged rounds of both blocks' workload seconds
    rounds: int
    wall_round_s: float | None = None  # the pilot's wall seconds per round (comparison_plan), restarts included
    round_log_ratios: tuple[float, ...] = field(default=(), repr=False)  # per judged round, in round order
    round_units: tuple[int | None, ...] = field(default=(), repr=False)  # each of those rounds' unit (records')

    def recorded_units(self) -> list[list[float]] | None:
        """The rounds' log ratios grouped by the unit the records name (``unit`` on comparison_block, since
        issue 38); None where the records do not say, or every unit has one round (no within spread)."""
        if len(self.round_units) != len(self.round_log_ratios) or any(u is None for u in self.round_units):
            return None
        groups: dict[int, list[float]] = {}
        for u, v in zip(self.round_units, self.round_log_ratios, strict=True):
            groups.setdefault(int(u or 0), []).append(v)
        units = [groups[k] for k in sorted(groups)]
        return units if len(units) >= 2 and any(len(u) >= 2 for u in units) else None

    def costs(self, *, warmup_s: float = 0.0, concurrent: bool = False) -> Costs:
        """A unit's costs: both arms' median starts (one after the other unless ``concurrent``) and the
        round. Block records hold the workload's own seconds; where the pilot's wall seconds per round are
        known and the pair was not restarted in it (one start per arm), the round is the larger of the two."""
        ref, cand = self.start_s.get("reference"), self.start_s.get("candidate")
        if ref is None or cand is None:
            raise ValueError(f"{self.config}/{self.scenario}: no arm_start record for both roles ({dict(self.starts)})")
        round_s = self.round_s
        if self.wall_round_s is not None and max(self.starts.values(), default=0) <= 1:
            round_s = max(round_s, self.wall_round_s)
        return Costs.of_arms(ref, cand, round_s, warmup_s=warmup_s, concurrent=concurrent)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """A results.jsonl's records; a bad line is an error naming the file and line."""
    return [row for _, row in iter_jsonl(path)]


def costs_from_records(
    records: Iterable[Mapping[str, Any]], *, metric: str = "output_throughput", session: str | None = None
) -> dict[tuple[str, str], RecordedCosts]:
    """Per (config, scenario): start seconds per arm from ``arm_start`` records (they name the config, not
    the scenario: every scenario of a config shares them), the round's seconds from ``comparison_block``
    records (``metrics.duration`` of both blocks of each judged round), the pilot's wall seconds per round
    from ``comparison_plan``, and the per-round log ratios of ``metric`` (for :func:`components` once the
    rounds' units are known). ``session`` keeps one session's records where they carry a ``session`` key."""
    starts: dict[str, dict[str, list[float]]] = {}
    blocks: dict[tuple[str, str], dict[int, dict[str, Mapping[str, Any]]]] = {}
    walls: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if session is not None and r.get("compare_session", r.get("session", session)) != session:
            continue
        kind, config = r.get("record"), r.get("config")
        if not isinstance(config, str):
            continue
        if kind == "arm_start" and isinstance(r.get("startup_s"), (int, float)):
            starts.setdefault(config, {}).setdefault(str(r.get("role")), []).append(float(r["startup_s"]))
        elif kind == "comparison_block" and isinstance(r.get("scenario"), str) and int(r.get("round", -1)) >= 0:
            per_round = blocks.setdefault((config, r["scenario"]), {}).setdefault(int(r["round"]), {})
            per_round[str(r.get("role"))] = {
                **(r.get("metrics") or {}),
                "unit": r.get("unit"),
                "wall_s": r.get("wall_s"),
            }
        elif kind == "comparison_plan" and isinstance(r.get("seconds_per_round"), (int, float)):
            walls.setdefault((config, str(r.get("scenario"))), []).append(float(r["seconds_per_round"]))
    out: dict[tuple[str, str], RecordedCosts] = {}
    for (config, scenario), by_round in sorted(blocks.items()):
        seconds: list[float] = []
        ratios: list[float] = []
        units: list[int | None] = []
        for _, pair in sorted(by_round.items()):
            ref, cand = pair.get("reference"), pair.get("candidate")
            if ref is None or cand is None:
                continue
            d_ref, d_cand = ref.get("wall_s") or ref.get("duration"), cand.get("wall_s") or cand.get("duration")
            if isinstance(d_ref, (int, float)) and isinstance(d_cand, (int, float)):
                seconds.append(float(d_ref) + float(d_cand))
            v_ref, v_cand = ref.get(metric), cand.get(metric)
            if isinstance(v_ref, (int, float)) and isinstance(v_cand, (int, float)) and v_ref > 0 and v_cand > 0:
                ratios.append(math.log(v_cand / v_ref))
                unit = ref.get("unit")
                units.append(int(unit) if isinstance(unit, int) else None)
        if not seconds:
            continue
        arm = starts.get(config, {})
        wall = walls.get((config, scenario))
        out[(config, scenario)] = RecordedCosts(
            config,
            scenario,
            {role: statistics.median(v) for role, v in sorted(arm.items())},
            {role: len(v) for role, v in sorted(arm.items())},
            statistics.median(seconds),
            len(seconds),
            statistics.median(wall) if wall else None,
            tuple(ratios),
            tuple(units),
        )
    return out


def units_of(values: Sequence[float], unit_rounds: int) -> list[list[float]]:
    """Consecutive rounds grouped into units of ``unit_rounds`` (a last partial unit is dropped), as the
    runner groups them (``Rounds.unit_of``)."""
    if unit_rounds < 1:
        raise ValueError(f"units_of: unit_rounds must be >= 1, got {unit_rounds}")
    whole = len(values) - len(values) % unit_rounds
    return [list(values[i : i + unit_rounds]) for i in range(0, whole, unit_rounds)]


def dry_run(
    records: Iterable[Mapping[str, Any]],
    budget_s: float,
    target: Target,
    *,
    unit_rounds: int = 1,
    sd_between: float | None = None,
    start_s_per_arm: float | None = None,
    warmup_s: float = 0.0,
    concurrent: bool = False,
    session: str | None = None,
) -> Allocation:
    """The plan table from a previous session's records, without a server: per (config, scenario) the
    recorded costs and the noise of its per-round log ratios. ``unit_rounds``: the rounds each recorded
    pair of servers played (1 when the session kept one pair: then only the within SD is measured, and
    ``sd_between`` must be given, e.g. from another session's pilot); with units of several rounds the
    components come from :func:`components` unless ``sd_between`` overrides the between SD.
    ``start_s_per_arm`` replaces the recorded starts (what would a 60-s start cost?). Records that name
    each round's ``unit`` (sessions since issue 38) give the components of their own units."""
    recorded = costs_from_records(records, session=session)
    if not recorded:
        raise ValueError("dry run: no comparison_block records with a scenario")
    scenarios: list[Scenario] = []
    for (config, scenario), rec in recorded.items():
        name = f"{config}/{scenario}"
        if start_s_per_arm is not None:
            rec = replace(rec, start_s={"reference": start_s_per_arm, "candidate": start_s_per_arm})
        costs = rec.costs(warmup_s=warmup_s, concurrent=concurrent)
        if len(rec.round_log_ratios) < 2 * max(unit_rounds, 2):
            raise ValueError(f"dry run: {name} has {len(rec.round_log_ratios)} rounds, too few to measure its noise")
        recorded_units = rec.recorded_units()
        if recorded_units is not None:  # the records name each round's unit (issue 38): the pilot's own nesting
            comp = components(recorded_units)
            noise = Noise(comp.sd_between if sd_between is None else sd_between, comp.sd_within)
        elif unit_rounds == 1:
            if sd_between is None:
                raise ValueError(
                    f"dry run: {name} kept one pair of servers (unit_rounds=1): give sd_between, the SD of a "
                    "pair's offset, from a session that restarted the pairs"
                )
            within = float(np.std(rec.round_log_ratios, ddof=1))
            noise = Noise(sd_between, within)
        else:
            comp = components(units_of(rec.round_log_ratios, unit_rounds))
            noise = Noise(comp.sd_between if sd_between is None else sd_between, comp.sd_within)
        scenarios.append(Scenario(name, costs, noise, target))
    return allocate(budget_s, scenarios)


# --- the unit of a running comparison ---------------------------------------------------------------


def unit_for_session(
    name: str,
    costs: Costs,
    noise: Noise,
    target: Target,
    *,
    budget_s: float | None = None,
    max_rounds: int | None = None,
    force_floor: bool = False,
) -> UnitPlan:
    """The unit a comparison plays, chosen once its first pair of servers is timed: the cheapest plan
    reaching the target, among those within the budget left and ``max_rounds``; where none reaches it, the
    one that detects the smallest change within them. Where not even ``target.min_units`` units fit, the
    budget is a cap (issue 57): a plan of 0 units whose note says "budget too small to judge" and what the
    floor would cost; ``force_floor`` (``--llmbench-compare-floor``) plays the floor anyway, over budget."""
    least = target.min_units
    cap = MAX_UNIT_ROUNDS if max_rounds is None else max(ROUND_STEP, max_rounds // least // ROUND_STEP * ROUND_STEP)
    choices = list(range(ROUND_STEP, min(cap, MAX_UNIT_ROUNDS) + 1, ROUND_STEP))

    def room(m: int) -> int:
        n = MAX_UNITS if max_rounds is None else max_rounds // m
        if budget_s is not None:
            n = min(n, int(budget_s // costs.unit_s(m)))
        return n

    best: tuple[float, int, int] | None = None
    for m, need in zip(choices, _units_needed(choices, noise, target), strict=True):
        if need is not None and need <= room(m) and (best is None or costs.seconds(need, m) < best[0]):
            best = (costs.seconds(need, m), need, m)
    if best is not None:
        return _plan_of(name, best[1], best[2], costs, noise, target)
    fits = [(gap_at(room(m), m, noise, target), room(m), m) for m in choices if room(m) >= least]
    if not fits:
        floor_s = costs.seconds(least, ROUND_STEP)
        if not force_floor:
            return UnitPlan(
                name,
                0,
                ROUND_STEP,
                0.0,
                math.inf,
                0.0,
                target,
                reached=False,
                note=f"budget too small to judge: the {least}-unit floor would cost ~{duration(floor_s)}",
            )
        return _plan_of(
            name,
            least,
            ROUND_STEP,
            costs,
            noise,
            target,
            reached=False,
            note=f"over budget: the {least}-unit floor, ~{duration(floor_s)} (--llmbench-compare-floor)",
        )
    _, n, m = min(fits)
    p = _plan_of(name, n, m, costs, noise, target)
    return replace(p, reached=p.power >= target.power, note="" if p.power >= target.power else "the budget's best")
