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
  (experiments/compare/plan_lab.py
  ``shared_offset_false_alarm`` says by how much). At ``sd_between = 0`` the fresh-pair plan already
  converges to it: few units, many rounds each, but still :data:`MIN_UNITS` units so the test keeps its df
  and stays exact if the offset was not 0 after all.
- **one arm restarted per unit** (the reference kept up): each unit's offset is ``c_u - r0`` with the
  reference's ``r0`` shared by every unit, so the units are correlated and the same bias comes back at half
  the variance (a pair's offset variance is the sum of the two arms'): ``shared_offset_false_alarm`` in
  experiments/compare/plan_lab.py
  with ``shared_sd = sd_between / sqrt(2)``. It saves half the starts, not the bias.
- **per-block starts** (one arm on the GPU at a time): every block starts its server, so a round costs two
  starts and the round is the unit: the fresh-pair cost with ``m = 1`` (:func:`plan` with
  ``unit_rounds=1``). It is what a GPU that holds one arm must pay, never a choice.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import optimize, stats

from pytest_llmbench.compare.margins import RATIO, Sizes
from pytest_llmbench.compare.power import MIN_UNITS, distance
from pytest_llmbench.compare.stats import POWER, scale, worsening

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
