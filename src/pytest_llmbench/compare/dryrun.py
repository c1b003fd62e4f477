"""The dry run: the plan table from a previous session's records, without a server (``compare-plan``).

Why apart from the planner: it reads records (arm starts, blocks, the pilot's plan) and turns them into the
planner's inputs; the planner itself (compare/plan.py, compare/spend.py) never reads a file.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from pytest_llmbench.compare.nested import components, units_of
from pytest_llmbench.compare.placement import Runner, choose
from pytest_llmbench.compare.placement import table as placement_table
from pytest_llmbench.compare.plan import Costs, Noise, Target
from pytest_llmbench.compare.spend import Allocation, Scenario, allocate
from pytest_llmbench.jsonl import iter_jsonl


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
        noise = recorded_noise(rec, name, unit_rounds, sd_between)
        scenarios.append(Scenario(name, costs, noise, target))
    return allocate(budget_s, scenarios)


def recorded_noise(rec: RecordedCosts, name: str, unit_rounds: int, sd_between: float | None) -> Noise:
    """The nested model's SDs from a recorded scenario's per-round log ratios (see :func:`dry_run`)."""
    if len(rec.round_log_ratios) < 2 * max(unit_rounds, 2):
        raise ValueError(f"dry run: {name} has {len(rec.round_log_ratios)} rounds, too few to measure its noise")
    recorded_units = rec.recorded_units()
    if recorded_units is not None:  # the records name each round's unit (issue 38): the pilot's own nesting
        comp = components(recorded_units)
        return Noise(comp.sd_between if sd_between is None else sd_between, comp.sd_within)
    if unit_rounds == 1:
        if sd_between is None:
            raise ValueError(
                f"dry run: {name} kept one pair of servers (unit_rounds=1): give sd_between, the SD of a "
                "pair's offset, from a session that restarted the pairs"
            )
        return Noise(sd_between, float(np.std(rec.round_log_ratios, ddof=1)))
    comp = components(units_of(rec.round_log_ratios, unit_rounds))
    return Noise(comp.sd_between if sd_between is None else sd_between, comp.sd_within)


def placement_tables(
    records: Iterable[Mapping[str, Any]],
    target: Target,
    runner: Runner,
    starts_s: Sequence[float | None],
    *,
    unit_rounds: int = 1,
    sd_between: float | None = None,
    warmup_s: float = 0.0,
    session: str | None = None,
    by: str = "gpu",
) -> list[str]:
    """Every placement's plan (compare/placement.py) per recorded scenario and start cost: the recorded
    round and noise, each arm's start as recorded (None) or as given (a big model's 60, 180, 600 s)."""
    recorded = costs_from_records(records, session=session)
    if not recorded:
        raise ValueError("dry run: no comparison_block records with a scenario")
    lines: list[str] = []
    for (config, scenario), rec in recorded.items():
        name = f"{config}/{scenario}"
        noise = recorded_noise(rec, name, unit_rounds, sd_between)
        round_s = rec.costs(warmup_s=warmup_s).round_s
        for start in starts_s:
            start_s = start if start is not None else max(rec.start_s.values(), default=0.0)
            best, plans = choose(runner, start_s, round_s, noise, target, warmup_s=warmup_s, by=by)
            head = (
                f"{name}: start {start_s:g} s per arm{'' if start is not None else ' (recorded)'}, round "
                f"{round_s:.2g} s, offset SD {100 * noise.sd_between:.2g}%, round SD {100 * noise.sd_within:.2g}%; "
            )
            table = placement_table(best, plans, target)
            lines += [head + table[0], *table[1:]]
    return lines
