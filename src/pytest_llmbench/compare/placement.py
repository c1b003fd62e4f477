"""Where the two arms run, and what each placement costs to reach the target (issue 57).

Why: a production config (TP=2, most of each GPU's memory) cannot share its GPUs with a second arm, and
per-block restarts then pay two starts per round. A runner with at least twice the config's GPUs can keep
both arms up on **disjoint** sets, with no restart per round. The sets differ (topology, clocks, a slower
card), so the set effect must cancel: every unit is two halves, each on a fresh pair of servers, the arms
on swapped sets in the second half. A unit's value is the mean of its two halves' log ratios, in which the
set effect ``s`` enters once with each sign and cancels exactly; the unit-level t test stays exact (the
halves' offsets are in its error term) and the set effect is estimated from the halves' difference.

The placements, as the planner prices them (``S`` one arm's start, ``R`` one round: both arms' blocks one
after the other, ``W`` the warmup requests on a fresh pair, ``G`` the config's GPUs):

=====================  ========  =========================================  ==========================
placement              GPUs held one unit (wall)                           a unit's value: variance
=====================  ========  =========================================  ==========================
shared                 G         2S + W + m·R            (starts one after  sb² + sw²/m
                                                          the other)
per-block              G         2S + 2W + R             (m = 1)            sb² + sw²
disjoint-interleaved   2G        2·(S + W + h·R)         (starts at once)   sb²/2 + sw²/(2h)
disjoint-parallel      2G        2·(S + W + h·f·R/2)     (blocks at once)   sb²/2 + sw²/(2h)
=====================  ========  =========================================  ==========================

``h`` the rounds of a half (whole ABBA pairs), ``f`` the parallel interference (a block's seconds beside
the other arm's over alone; 1 when the arms share nothing). A disjoint unit is priced as a unit of the
nested model (compare/plan.py) with the start 2S, the round 2R (or f·R) and the SDs over sqrt 2, so the one
search in compare/plan.py plans every placement; GPU-seconds are the wall seconds times the GPUs held.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_llmbench.compare.plan import Costs, Noise, Target, UnitPlan, duration, plan
from pytest_llmbench.compare.rounds import Block

SHARED, PER_BLOCK, INTERLEAVED, PARALLEL = "shared", "per-block", "disjoint-interleaved", "disjoint-parallel"
PLACEMENTS = (SHARED, PER_BLOCK, INTERLEAVED, PARALLEL)
DISJOINT = (INTERLEAVED, PARALLEL)


@dataclass(frozen=True)
class Runner:
    """What the placements may use: the config's GPUs per arm, the runner's GPUs, whether both arms fit on
    one arm's GPUs, and the parallel interference factor (measured, else 1)."""

    gpus_per_arm: int
    runner_gpus: int
    both_fit: bool
    interference: float = 1.0

    def __post_init__(self) -> None:
        if self.gpus_per_arm < 1 or self.runner_gpus < self.gpus_per_arm:
            raise ValueError(
                f"runner: {self.runner_gpus} GPU(s) cannot hold a config of {self.gpus_per_arm} GPU(s) per arm"
            )
        if not (math.isfinite(self.interference) and self.interference >= 1.0):
            raise ValueError(f"runner: the parallel interference must be >= 1, got {self.interference!r}")

    def allows(self, placement: str) -> str | None:
        """None where ``placement`` can run here, else why not."""
        if placement == SHARED and not self.both_fit:
            return "both arms do not fit on one arm's GPUs"
        if placement in DISJOINT and self.runner_gpus < 2 * self.gpus_per_arm:
            return f"needs {2 * self.gpus_per_arm} GPUs, the runner has {self.runner_gpus}"
        return None

    def held(self, placement: str) -> int:
        return 2 * self.gpus_per_arm if placement in DISJOINT else self.gpus_per_arm


@dataclass(frozen=True)
class PlacedPlan:
    """One placement's plan: the unit plan in the nested model's terms, and what it costs."""

    placement: str
    plan: UnitPlan | None  # None: the placement cannot run here
    gpus: int
    why_not: str = ""

    @property
    def wall_s(self) -> float:
        return self.plan.seconds if self.plan is not None else math.inf

    @property
    def gpu_s(self) -> float:
        return self.wall_s * self.gpus

    @property
    def rounds_per_unit(self) -> int:
        """Rounds a unit plays (both halves of a disjoint unit)."""
        if self.plan is None:
            return 0
        return 2 * self.plan.unit_rounds if self.placement in DISJOINT else self.plan.unit_rounds

    def describe(self) -> str:
        if self.plan is None:
            return f"{self.placement}: not here ({self.why_not})"
        p = self.plan
        if not p.reached:
            return f"{self.placement}: out of reach ({p.note or 'the target needs more units than the limit'})"
        unit = (
            f"{p.units} units of 2 halves x {p.unit_rounds} rounds (arms swap sets each half)"
            if self.placement in DISJOINT
            else f"{p.units} units of {p.unit_rounds} round{'s' if p.unit_rounds != 1 else ''}"
        )
        return (
            f"{self.placement}: {unit}, {self.gpus} GPU(s), ~{duration(self.wall_s)} wall, "
            f"~{self.gpu_s / 60:.0f} GPU-min"
        )


def costs_of(placement: str, start_s: float, round_s: float, warmup_s: float, interference: float = 1.0) -> Costs:
    """A placement's unit cost in the nested model's terms (a disjoint unit: both halves)."""
    if placement == SHARED:
        return Costs(2 * start_s, round_s, warmup_s)
    if placement == PER_BLOCK:
        return Costs(2 * start_s, round_s + warmup_s, warmup_s)
    if placement == INTERLEAVED:
        return Costs(2 * start_s, 2 * round_s, 2 * warmup_s)
    if placement == PARALLEL:
        return Costs(2 * start_s, interference * round_s, 2 * warmup_s)
    raise ValueError(f"unknown placement {placement!r}; one of {', '.join(PLACEMENTS)}")


def noise_of(placement: str, noise: Noise) -> Noise:
    """A placement's unit noise in the nested model's terms: a disjoint unit averages two fresh pairs."""
    if placement in DISJOINT:
        return Noise(noise.sd_between / math.sqrt(2), noise.sd_within / math.sqrt(2))
    return noise


def plan_placement(
    placement: str, runner: Runner, start_s: float, round_s: float, noise: Noise, target: Target, warmup_s: float = 0.0
) -> PlacedPlan:
    """The cheapest plan of ``placement`` reaching the target (compare/plan.py's search), or why it cannot
    run on ``runner``."""
    why = runner.allows(placement)
    if why is not None:
        return PlacedPlan(placement, None, runner.held(placement), why)
    costs = costs_of(placement, start_s, round_s, warmup_s, runner.interference)
    fixed = 1 if placement == PER_BLOCK else None
    p = plan(placement, costs, noise_of(placement, noise), target, unit_rounds=fixed)
    return PlacedPlan(placement, p, runner.held(placement))


def choose(
    runner: Runner,
    start_s: float,
    round_s: float,
    noise: Noise,
    target: Target,
    *,
    warmup_s: float = 0.0,
    placements: Sequence[str] = PLACEMENTS,
    by: str = "gpu",
) -> tuple[PlacedPlan, list[PlacedPlan]]:
    """Every placement's plan, and the cheapest that reaches the target: by GPU-seconds (``by="gpu"``, the
    wall time breaking ties) or by wall time (``by="wall"``: a runner paid by the hour whatever it holds)."""
    if by not in ("gpu", "wall"):
        raise ValueError(f"choose: by must be 'gpu' or 'wall', got {by!r}")
    plans = [plan_placement(p, runner, start_s, round_s, noise, target, warmup_s) for p in placements]
    ok = [p for p in plans if p.plan is not None and p.plan.reached]
    if not ok:
        raise ValueError("no placement reaches the target here: " + "; ".join(p.describe() for p in plans))
    key = (lambda p: (p.gpu_s, p.wall_s)) if by == "gpu" else (lambda p: (p.wall_s, p.gpu_s))
    return min(ok, key=key), plans


#: the session's mode for each placement (--llmbench-arm-servers)
MODE_OF = {SHARED: "both", PER_BLOCK: "per-block", INTERLEAVED: "disjoint", PARALLEL: "disjoint-parallel"}

#: the round cost the auto placement's table is priced at before the pilot has timed one. The choice does
#: not turn on it: on a runner with a second set, disjoint-parallel is the cheapest in wall time at every
#: round cost from 0.5 to 300 s and start cost from 1 to 600 s, parallel interference up to 1.3
#: (tests/compare/test_placement.py), so only the printed seconds do
ASSUMED_ROUND_S = 10.0


@dataclass(frozen=True)
class AutoPlacement:
    """What ``auto`` chose for one compared config: the session mode, the two sets (reference's first; the
    candidate keeps the GPUs its server already runs on) and the lines that say why."""

    mode: str
    sets: tuple[tuple[str, ...], tuple[str, ...]] | None
    lines: tuple[str, ...]


def auto_placement(
    arm_gpus: Sequence[str],
    slice_gpus: Sequence[str],
    *,
    both_fit: bool,
    start_s: float,
    noise: Noise,
    target: Target,
    disjoint_refused: str | None = None,
    interference: float = 1.0,
    round_s: float = ASSUMED_ROUND_S,
) -> AutoPlacement | None:
    """``--llmbench-arm-servers auto`` on a runner (this worker's GPUs, ``slice_gpus``) that may hold a second
    set of the candidate's ``arm_gpus``: every placement priced by compare/plan.py at the measured start, the
    cheapest in **wall time** chosen (the worker holds its GPUs whether they run or idle, so its hours are
    the cost). None where no second set exists: the session keeps the shared / per-block rule.
    ``disjoint_refused``: why the disjoint placements cannot run (e.g. a unit length that is not whole ABBA
    pairs per half); they are then priced out and the line says so."""
    spare = [g for g in slice_gpus if g not in set(arm_gpus)]
    gpus = len(arm_gpus)
    if not gpus or len(spare) < gpus:
        return None
    runner = Runner(gpus, gpus + len(spare), both_fit, interference)
    allowed = [p for p in PLACEMENTS if p not in DISJOINT] if disjoint_refused else list(PLACEMENTS)
    best, plans = choose(runner, start_s, round_s, noise, target, placements=allowed, by="wall")
    sets = (tuple(spare[:gpus]), tuple(arm_gpus)) if best.placement in DISJOINT else None
    where = ",".join(slice_gpus)
    head = (
        f"llmbench compare: auto placement on GPUs {where}: {best.placement}"
        + (f", the reference on {','.join(sets[0])}, the candidate on {','.join(sets[1])}" if sets else "")
        + f" (start {start_s:.0f} s measured, round {round_s:g} s assumed until timed; cheapest in wall time)"
    )
    refused = [f"  disjoint placements refused: {disjoint_refused}"] if disjoint_refused else []
    return AutoPlacement(MODE_OF[best.placement], sets, (head, *table(best, plans, target), *refused))


def table(best: PlacedPlan, plans: Sequence[PlacedPlan], target: Target) -> list[str]:
    """The lines the dry run and the session print: every placement, the chosen one marked."""
    size = f"{100 * target.sizes.detect:.3g}%" if target.sizes.kind == "ratio" else f"{target.sizes.detect:.3g}"
    lines = [f"placements to {100 * target.power:g}% power at {size}:"]
    for p in plans:
        lines.append(("* " if p is best else "  ") + p.describe())
    return lines


# --- the set effect, measured on a disjoint comparison's rounds ----------------------------------------


@dataclass(frozen=True)
class SetEffect:
    """How much faster a server runs on set B than on set A (a ratio of ``metric``), from the units' two
    halves: cancelled in the comparison by design, shown so that a slow GPU set is seen."""

    metric: str
    ratio: float
    low: float
    high: float
    units: int
    sets: tuple[tuple[str, ...], tuple[str, ...]]

    def describe(self) -> str:
        a, b = (",".join(s) for s in self.sets)
        return (
            f"set effect ({self.metric}, set {b} over set {a}): x{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}] "
            f"over {self.units} units; cancelled in the comparison (each arm ran half of every unit on each set)"
        )

    def as_record(self) -> dict[str, object]:
        return {
            "metric": self.metric,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "units": self.units,
            "sets": [list(s) for s in self.sets],
        }


def set_effect(
    blocks: Sequence[Block], sets: tuple[tuple[str, ...], tuple[str, ...]], metric: str = "output_throughput"
) -> SetEffect | None:
    """Per unit, half the difference of its halves' mean log ratios (candidate on set B, then on set A),
    which is set B's log speed over set A's whatever the arms differ by; the mean over units with a 95% t
    interval (df units - 1). None with fewer than 2 units holding both halves."""
    by_round: dict[int, dict[str, Block]] = {}
    for b in blocks:
        if not b.warmup and b.unit is not None and b.devices is not None:
            by_round.setdefault(b.round, {})[b.role] = b
    halves: dict[int, tuple[list[float], list[float]]] = {}
    for pair in by_round.values():
        ref, cand = pair.get("reference"), pair.get("candidate")
        if ref is None or cand is None or ref.unit is None:
            continue
        a, c = ref.result.metrics.get(metric), cand.result.metrics.get(metric)
        if not (isinstance(a, (int, float)) and isinstance(c, (int, float)) and a > 0 and c > 0):
            continue
        on_b = tuple(cand.devices or ()) == sets[1]
        halves.setdefault(ref.unit, ([], []))[0 if on_b else 1].append(math.log(c / a))
    diffs = [(np.mean(on_b) - np.mean(on_a)) / 2 for on_b, on_a in halves.values() if on_b and on_a]
    if len(diffs) < 2:
        return None
    mean = float(np.mean(diffs))
    low, high = stats.t.interval(0.95, len(diffs) - 1, loc=mean, scale=float(stats.sem(diffs)))
    return SetEffect(metric, math.exp(mean), math.exp(float(low)), math.exp(float(high)), len(diffs), sets)
