"""One scenario's comparison as it runs: what each played block, the timed first pair and the pilot's plan
write and say (the callbacks ``interleave.run_rounds`` calls).

Why apart from the session plugin: the session holds what lives across tests (arms, alphas, the budget,
Holm); this holds what lives for one ``bench.run`` (its blocks, its clock, its progress line).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_llmbench.compare import records, terminal
from pytest_llmbench.compare.arms import ArmPair
from pytest_llmbench.compare.options import CompareSettings
from pytest_llmbench.compare.placement import set_effect
from pytest_llmbench.compare.plan import ROUND_STEP, Costs
from pytest_llmbench.compare.power import Design, Plan
from pytest_llmbench.compare.progress import UnitProgress
from pytest_llmbench.compare.rounds import Block, Rounds
from pytest_llmbench.compare.spend import SessionBudget, choose_unit, pilot_components, target_for


@dataclass
class ScenarioRun:
    """The callbacks of one scenario's rounds, and what they saw (every block played, the unit's length)."""

    config: pytest.Config
    session_id: str
    settings: CompareSettings
    alphas: Mapping[str, float]
    budget: SessionBudget
    pair: ArmPair
    bench: Any
    scenario: str
    design: Design
    write_starts: Callable[[], None]
    unit_rounds: int = 1
    t_run: float = field(default_factory=time.monotonic)
    played: list[Block] = field(default_factory=list)  # every block, for the comparison of an interrupted run
    pilot_blocks: list[Block] = field(default_factory=list)
    played_first: dict[int, str] = field(default_factory=dict)  # each round's first block, as played

    def __post_init__(self) -> None:
        self.name = f"{self.pair.config_name} {self.scenario}"
        self.progress = UnitProgress(self.name, self.say, self.design.pilot_units)

    def say(self, line: str) -> None:
        terminal.say(self.config, line)

    def on_block(self, block: Block) -> None:
        self.played.append(block)
        self.progress.block(block.unit)  # "unit k of n, elapsed, ~remaining" as each unit starts
        first = self.played_first.setdefault(block.round, block.role)
        self.bench.emit(records.block(self.session_id, self.pair, self.bench, self.scenario, block, first))
        load = block.result.host_load
        if load is not None and load.contended:  # the busy host named where the block is played
            self.say(f"llmbench compare: {self.name} round {block.round} ({block.role}): host busy: {load.describe()}")
        if not block.warmup:
            self.pilot_blocks.append(block)

    def on_costs(self, costs: Costs) -> tuple[int, int]:
        """The first pair is timed: the unit chosen by cost, the plan table said and recorded."""
        s = self.settings
        aim = target_for(s.decide, self.alphas, detect=s.detect, ignore=s.ignore, power=self.design.power)
        if aim is None:  # nothing judged per round: the shipped two rounds per pair
            return ROUND_STEP, self.design.pilot_units
        metric, target = aim
        elapsed = time.monotonic() - self.t_run
        choice = choose_unit(self.name, costs, target, self.design, self.budget, elapsed_s=elapsed)
        for line in choice.table:
            self.say(line)
        self.write_starts()
        self.bench.emit(
            records.unit_plan(
                self.session_id,
                self.pair,
                self.bench,
                self.scenario,
                metric=metric,
                choice=choice,
                costs=costs,
                design=self.design,
                session_budget_s=self.budget.total_s,
            )
        )
        self.progress.plan(choice.pilot_units, "pilot")
        self.unit_rounds = choice.plan.unit_rounds
        return choice.plan.unit_rounds, choice.pilot_units

    def on_plan(self, plan: Plan) -> None:
        self.progress.plan(plan.rounds // max(plan.unit_rounds, 1))
        predicted_s = time.monotonic() - self.t_run + (plan.rounds - plan.pilot) * plan.seconds_per_round
        components = pilot_components(self.pilot_blocks, plan.unit_rounds)
        self.bench.emit(
            records.pilot_plan(
                self.session_id,
                self.pair,
                self.bench,
                self.scenario,
                plan,
                predicted_s=predicted_s,
                components=components,
            )
        )
        if plan.underpowered:
            self.say(f"llmbench compare: {self.name}: {plan.describe()}")

    def show_set_effect(self, rounds: Rounds, placement: str, sets: Any) -> None:
        """Disjoint sets (given, or chosen by ``auto``): the set effect (cancelled by the swap in every unit)
        recorded and said."""
        if sets is None:
            return
        effect = set_effect(rounds.blocks, sets)
        self.bench.emit(
            records.set_effect(
                self.session_id,
                self.pair,
                self.bench,
                self.scenario,
                effect,
                placement,
                sets,
                self.settings.device_kind,
            )
        )
        self.say(f"llmbench compare: {self.name}: " + (effect.describe() if effect else "set effect: too few units"))
