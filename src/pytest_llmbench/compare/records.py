"""The records a comparison session writes, one builder per kind (``comparison_block``,
``comparison_unit_plan``, ``comparison_plan``, ``comparison``, ``arm_start``, ``comparison_budget``).

Why apart from the session plugin: the keys are what reports, the dry run (compare/dryrun.py) and
history read back; keeping them in one place keeps the writer's names and the readers' in one view, and
the session only decides when each is written (through ``bench.emit`` or ``sink.emit``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_llmbench.compare.arms import ArmPair
    from pytest_llmbench.compare.interleave import ArmStart, Outcome
    from pytest_llmbench.compare.placement import SetEffect
    from pytest_llmbench.compare.plan import Costs
    from pytest_llmbench.compare.power import Design, Plan
    from pytest_llmbench.compare.rounds import Block
    from pytest_llmbench.compare.spend import UnitChoice


def _head(kind: str, session_id: str, pair: ArmPair, bench: Any, scenario: str | None) -> dict[str, Any]:
    return {
        "record": kind,
        "compare_session": session_id,
        "config": pair.config_name,
        "nodeid": bench.nodeid,
        "test_key": bench.test_key,
        "scenario": scenario,
    }


def block(session_id: str, pair: ArmPair, bench: Any, scenario: str, b: Block, first_in_round: str) -> dict[str, Any]:
    """One arm's block of one round, as played."""
    load = b.result.host_load
    return {
        **_head("comparison_block", session_id, pair, bench, scenario),
        "round": b.round,
        "unit": b.unit,
        "wall_s": b.wall_s,
        "role": b.role,
        "first_in_round": first_in_round,  # order effects
        "started_first": b.started_first,  # whose server started first for this unit's pair
        "devices": list(b.devices) if b.devices is not None else None,  # its set (disjoint placements)
        "arm": pair.arm(b.role).label,
        "notes": b.result.notes,
        "warmup": b.warmup,
        "prompt_ids": list(b.prompt_ids),
        "metrics": {k: v for k, v in b.result.metrics.items() if isinstance(v, (int, float))},
        "capacity": b.result.metrics.get("capacity"),  # a capacity search's probes (report/pareto.py)
        "host_load": load.as_dict() if load else None,
        "telemetry": b.result.telemetry.as_dict() if b.result.telemetry else None,
    }


def unit_plan(
    session_id: str,
    pair: ArmPair,
    bench: Any,
    scenario: str,
    *,
    metric: str,
    choice: UnitChoice,
    costs: Costs,
    design: Design,
    session_budget_s: float | None,
) -> dict[str, Any]:
    """What the first timed pair decided: the unit, the pilot, the table printed."""
    return {
        **_head("comparison_unit_plan", session_id, pair, bench, scenario),
        "metric": metric,
        "unit_rounds": choice.plan.unit_rounds,
        "units": choice.plan.units,
        "pilot_units": choice.pilot_units,
        "predicted_s": choice.plan.seconds,
        "detectable": choice.plan.detectable,
        "power": choice.plan.power,
        "reached": choice.plan.reached,
        "start_s": costs.start_s,
        "round_s": costs.round_s,
        "warmup_s": costs.warmup_s,
        "prior_sd_between": design.prior_sd_between,
        "prior_sd_within": design.prior_sd_within,
        "budget_s": choice.budget_s,
        "session_budget_s": session_budget_s,
        "table": choice.table,
    }


def pilot_plan(
    session_id: str,
    pair: ArmPair,
    bench: Any,
    scenario: str,
    plan: Plan,
    *,
    predicted_s: float,
    components: Mapping[str, Any],
) -> dict[str, Any]:
    """What the pilot planned: the rounds, the binding metric, the spreads."""
    return {
        **_head("comparison_plan", session_id, pair, bench, scenario),
        "rounds": plan.rounds,
        "needed": plan.needed,
        "limit": plan.limit,
        "pilot": plan.pilot,
        "unit_rounds": plan.unit_rounds,
        "units": plan.rounds // max(plan.unit_rounds, 1),
        "predicted_s": predicted_s,
        **components,
        "seconds_per_round": plan.seconds_per_round,
        "underpowered": plan.underpowered,
        "reason": plan.describe(),
        "needs": [{"metric": n.metric, "sd": n.spread.sd, "df": n.spread.df, "rounds": n.rounds} for n in plan.needs],
    }


def comparison(
    session_id: str,
    pair: ArmPair,
    bench: Any,
    c: Any,
    family: str,
    *,
    scenario: str | None,
    rounds: int,
    prompts: int,
    outcome: Outcome | None,
    interrupted: str | None,
    max_rounds: int,
    strict: bool,
    budget_s: float | None = None,
) -> dict[str, Any]:
    """One metric's verdict, with why the rounds stopped."""
    plan = outcome.plan if outcome is not None else None
    return {
        **_head("comparison", session_id, pair, bench, scenario),
        **c.as_record(),
        "family": family,
        "rounds": rounds,
        "prompts": prompts,
        "stop": "interrupted" if interrupted else outcome.stop if outcome else "cases",
        "stop_reason": interrupted or (outcome.describe() if outcome else f"every case measured on both arms ({c.n})"),
        "planned_rounds": plan.rounds if plan else None,
        "needed_rounds": plan.needed if plan else None,
        "underpowered": plan.underpowered if plan else False,
        "elapsed_s": outcome.elapsed_s if outcome else None,  # the scenario's rounds, first warm-up block on
        "budget_s": budget_s,  # what its share of the budget was (a cap: at most one unit past it)
        "max_rounds": max_rounds,
        "reference_arm": pair.reference.label,
        "candidate_arm": pair.candidate.label,
        "strict": strict,
    }


def arm_start(session_id: str, pair: ArmPair, s: ArmStart) -> dict[str, Any]:
    """One server start of an arm, timed."""
    return {
        "record": "arm_start",
        "compare_session": session_id,
        "config": pair.config_name,
        "role": s.role,
        "label": pair.arm(s.role).label,
        "startup_s": s.startup_s,
        "unit": s.unit,
        "devices": list(s.devices) if s.devices is not None else None,
        "host_rss_bytes": s.host_rss_bytes,
        "gpu_memory_gb": s.gpu_memory_gb,
        "build_info": s.build_info,
    }


def budget(
    session_id: str,
    alphas: Mapping[str, float] | None,
    per_comparison: Mapping[str, float],
    adjusted: list[dict[str, Any]],
) -> dict[str, Any]:
    """Holm across the session's comparisons: the record the session verdict (records/verdict.py) reads."""
    regressed = [r for r in adjusted if r.get("suite_verdict") == "regressed"]
    return {
        "record": "comparison_budget",
        "compare_session": session_id,
        "method": "holm",
        "alphas": dict(alphas) if alphas is not None else None,
        "per_comparison_alpha": dict(per_comparison),
        "comparisons": len(adjusted),
        "q_values": [{"nodeid": r["nodeid"], "metric": r["metric"], "q_value": r.get("q_value")} for r in adjusted],
        "suite_regressed": [{"nodeid": r["nodeid"], "metric": r["metric"]} for r in regressed],
    }


def set_effect(
    session_id: str,
    pair: ArmPair,
    bench: Any,
    scenario: str,
    effect: SetEffect | None,
    placement: str,
    sets: Sequence[Sequence[str]],
    device_kind: str,
) -> dict[str, Any]:
    """A disjoint placement's set effect (compare/placement.py), None where too few units had both halves."""
    return {
        **_head("comparison_set_effect", session_id, pair, bench, scenario),
        "placement": placement,
        "sets": [list(s) for s in sets],
        "device_kind": device_kind,
        "set_effect": effect.as_record() if effect is not None else None,
    }
