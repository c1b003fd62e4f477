"""The time a comparison session spends: a budget for the session split across its scenarios, and the
unit of a running comparison chosen by cost (compare/plan.py) once its first pair of servers is timed.

Why here and not in the session plugin: this is arithmetic on seconds and plans, testable without pytest,
and the dry run (compare/dryrun.py) prints the same table from recorded costs.

A session budget (``--llmbench-compare-budget 20m``) is known before any scenario runs; what a scenario
costs is not (its start and rounds are timed on its first pair). Each scenario, when its first pair is
timed, gets its share of what is left: :func:`allocate` over it and the scenarios still to come, these
assumed to cost what it costs (the table says so), so the shares equalize the detectable change and the
last scenario gets whatever the earlier ones left.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmbench.compare.judging import family_of, per_round, source_of
from pytest_llmbench.compare.margins import RATIO, sizes_for
from pytest_llmbench.compare.nested import components
from pytest_llmbench.compare.plan import (
    ROUND_STEP,
    Costs,
    Noise,
    Target,
    UnitPlan,
    best_within,
    duration,
    plan,
    unit_for_session,
)
from pytest_llmbench.compare.power import MIN_UNITS, Design
from pytest_llmbench.compare.rounds import Block
from pytest_llmbench.compare.stats import scale, worsening

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


def parse_seconds(text: str, where: str) -> float | None:
    """``300``, ``300s``, ``20m``, ``1.5h`` → seconds; ``none``/``off``/``0`` → None (no limit)."""
    raw = str(text).strip().lower()
    if raw in ("none", "no", "off", "0", ""):
        return None
    factor = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
    unit = next((u for u in ("min", "s", "m", "h") if raw.endswith(u)), "")
    try:
        value = float(raw[: len(raw) - len(unit)] if unit else raw) * factor.get(unit, 1.0)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a duration (300, 300s, 20m, 1.5h or 'none')") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{where}: {text!r} must be > 0 seconds (or 'none')")
    return value


def target_for(
    metrics: Iterable[str],
    alphas: Mapping[str, float],
    *,
    detect: Mapping[str, object] | None,
    ignore: Mapping[str, object] | None,
    power: float,
) -> tuple[str, Target] | None:
    """The metric a unit is planned for (output throughput when it decides, else the first deciding round
    metric) and its target; the pilot then plans the units for every deciding metric (compare/power.py)."""
    timed = [m for m in metrics if per_round(m)]
    if not timed:
        return None
    metric = "output_throughput" if "output_throughput" in timed else timed[0]
    source = source_of(metric)
    assert source is not None  # per_round says it has one
    target = Target(sizes_for(metric, detect, ignore), alphas[family_of(metric)], source.higher_is_better, power)
    return metric, target


@dataclass
class SessionBudget:
    """A session's seconds across its compared scenarios (one per compared test, counted up front)."""

    total_s: float | None  # the session's budget; None: each scenario has ``per_scenario_s``
    per_scenario_s: float | None
    scenarios: int
    spent_s: float = 0.0
    done: int = 0

    @property
    def left(self) -> int:
        """Scenarios still to run, this one included (never fewer than 1: a test may run more than one)."""
        return max(1, self.scenarios - self.done)

    def share_s(self) -> float | None:
        """This scenario's seconds before its costs are known: the rest over the scenarios to come."""
        if self.total_s is None:
            return self.per_scenario_s
        return max(0.0, self.total_s - self.spent_s) / self.left

    def finished(self, elapsed_s: float) -> None:
        self.spent_s += elapsed_s
        self.done += 1


@dataclass(frozen=True)
class UnitChoice:
    """What the first timed pair decided: the unit, the pilot's units, the scenario's budget, the table."""

    plan: UnitPlan
    pilot_units: int
    budget_s: float | None
    table: list[str]


def choose_unit(
    name: str,
    costs: Costs,
    target: Target,
    design: Design,
    budget: SessionBudget,
    *,
    elapsed_s: float,
) -> UnitChoice:
    """The unit of the running scenario (``name``), its pilot (the planned units, between ``MIN_UNITS`` and
    the ini's pilot), and the plan table. ``elapsed_s``: what this scenario spent before its costs were
    known (warm-up rounds, the timed pair), counted against its share."""
    noise = Noise(design.prior_sd_between, design.prior_sd_within)
    assumed = (
        f"start {costs.start_s:.0f} s, round {costs.round_s:.1f} s measured; offset SD "
        f"{100 * noise.sd_between:.2g}% and round SD {100 * noise.sd_within:.2g}% assumed until the pilot"
    )
    alloc: Allocation | None = None
    scenario_s = budget.share_s()
    if budget.total_s is not None and scenario_s is not None:
        # the scenarios to come are assumed to cost what this one costs: allocate then gives equal shares,
        # each spent on the plan that detects the most within it (the table says the common detectable size)
        others = [Scenario(f"{i}", costs, noise, target) for i in range(1, budget.left)]
        alloc = allocate(max(scenario_s * budget.left, 1.0), [Scenario(name, costs, noise, target), *others])
    within = None if scenario_s is None else max(scenario_s - elapsed_s, 0.0)
    plan = unit_for_session(
        name, costs, noise, target, budget_s=within, max_rounds=design.max_rounds, force_floor=design.force_floor
    )
    # 0 pilot units: the floor does not fit the budget (a cap) and the runner stops after the timed pair
    pilot_units = min(max(plan.units, MIN_UNITS), design.pilot_units) if plan.units else 0
    table = plan_table(plan, assumed, budget, alloc, scenario_s)
    return UnitChoice(plan, pilot_units, scenario_s, table)


def plan_table(
    plan: UnitPlan, assumed: str, budget: SessionBudget, alloc: Allocation | None, scenario_s: float | None
) -> list[str]:
    """The lines printed before the scenario's first full unit."""
    if budget.total_s is not None:
        left_s = max(0.0, budget.total_s - budget.spent_s)
        head = (
            f"llmbench compare plan: {duration(left_s)} of the session's {duration(budget.total_s)} left for "
            f"{budget.left} scenario(s)" + (f" ({alloc.rule})" if alloc is not None and alloc.plans[0].units else "")
        )
    else:
        per = "no time limit" if scenario_s is None else f"{duration(scenario_s)}"
        head = f"llmbench compare plan: {per} per scenario"
    lines = [head + ":", f"  {plan.describe()} [{assumed}]"]
    if budget.total_s is not None and budget.left > 1 and scenario_s is not None:
        lines.append(
            f"  {budget.left - 1} scenario(s) to come: ~{duration(scenario_s)} each (costs assumed like this one's "
            "until each is timed)"
        )
    return lines


def pilot_components(blocks: Iterable[Block], unit_rounds: int, metric: str = "output_throughput") -> dict[str, Any]:
    """The pilot's nested-model SDs of ``metric`` (per-round log ratios grouped by unit: ``plan.components``),
    for the record: what the next session's dry run and a unit chosen from records start from. Empty where
    the units have one round each, or fewer than two units were played."""
    pairs: dict[int, dict[int, dict[str, float]]] = {}
    for b in blocks:
        value = b.result.metrics.get(metric)
        if b.unit is None or b.round < 0 or not isinstance(value, (int, float)) or value <= 0:
            continue
        pairs.setdefault(b.unit, {}).setdefault(b.round, {})[b.role] = float(value)
    units = [
        [math.log(r["candidate"] / r["reference"]) for _, r in sorted(rounds.items()) if len(r) == 2]
        for _, rounds in sorted(pairs.items())
    ]
    units = [u for u in units if u]
    if unit_rounds < 2 or len(units) < 2 or all(len(u) < 2 for u in units):
        return {}
    c = components(units)
    return {"metric_sd": metric, "sd_between": c.sd_between, "sd_within": c.sd_within, "df_between": c.df_between}


def floor_starts(design: Design, keep_both: bool) -> int:
    """The server starts the ``MIN_UNITS``-unit floor needs at least, the test's running candidate not
    counted: the reference once and a fresh pair for every unit after the first (units restarted), the
    reference once (a pair kept up), or one start per block (per-block servers, warm-up rounds included)."""
    if not keep_both:
        return 2 * (design.warmup_rounds + MIN_UNITS)
    if design.restart_rounds == 0:
        return 1
    return 1 + 2 * (MIN_UNITS - 1)


def floor_warning(name: str, start_s: float, design: Design, keep_both: bool) -> str | None:
    """Before the first start (issue 57): where the floor's starts alone, at the running candidate's start,
    cost more than the scenario's budget, the line that says so; None where they may fit (the first timed
    pair decides) or the budget has no limit or the floor was asked for."""
    if design.budget_s is None or design.force_floor:
        return None
    starts = floor_starts(design, keep_both)
    least = starts * start_s
    if least <= design.budget_s:
        return None
    return (
        f"llmbench compare: {name}: budget too small to judge: the {MIN_UNITS}-unit floor needs at least {starts} "
        f"starts of ~{start_s:.0f} s (~{duration(least)}), the budget is {duration(design.budget_s)}; the "
        "comparison stops after its first timed rounds (--llmbench-compare-floor plays the floor anyway)"
    )
