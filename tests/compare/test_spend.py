"""The session's seconds (compare/spend.py): durations, the session budget's shares, the unit chosen by cost
once the first pair is timed, and the runner playing that unit (compare/interleave.py's choose_unit).
The servers are the recording doubles of test_interleave.py; the real llama-server runs in
test_plan_session.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_llmbench.compare.interleave import run_rounds
from pytest_llmbench.compare.judging import Judge
from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.plan import Costs, Noise, Target, plan
from pytest_llmbench.compare.power import MIN_UNITS, Design
from pytest_llmbench.compare.rounds import Block
from pytest_llmbench.compare.spend import Scenario as PlanScenario
from pytest_llmbench.compare.spend import (
    SessionBudget,
    allocate,
    choose_unit,
    parse_seconds,
    pilot_components,
    target_for,
)
from pytest_llmbench.workload.scenario import Scenario

from .test_interleave import Clock, _result, _servers
from .test_plan import H200_SD_WITHIN, TARGET, h200

TPUT = Target(Sizes("ratio", 0.01, 0.03), 0.01)


@pytest.mark.parametrize(
    ("text", "seconds"), [("300", 300.0), ("300s", 300.0), ("20m", 1200.0), ("1.5h", 5400.0), ("2min", 120.0)]
)
def test_durations_read_as_a_user_writes_them(text, seconds):
    assert parse_seconds(text, "x") == seconds


@pytest.mark.parametrize("text", ["none", "off", "0"])
def test_no_limit(text):
    assert parse_seconds(text, "x") is None


@pytest.mark.parametrize("text", ["soon", "-5", "5d"])
def test_a_bad_duration_names_where_it_came_from(text):
    with pytest.raises(ValueError, match=r"--budget: .* is not a duration|must be > 0"):
        parse_seconds(text, "--budget")


def test_the_session_budget_is_shared_by_the_scenarios_still_to_run():
    b = SessionBudget(1200.0, None, 3)
    assert b.share_s() == 400.0
    b.finished(600.0)  # the first scenario overran its share: the two left share what is left
    assert b.share_s() == 300.0 and b.left == 2
    b.finished(300.0)
    b.finished(300.0)
    assert b.left == 1 and b.share_s() == 0.0  # a test that runs one more scenario gets nothing, not an error
    assert SessionBudget(None, 300.0, 3).share_s() == 300.0


def test_a_slow_start_buys_long_units_and_the_table_says_so():
    """At a 60-s start per arm the unit is tens of rounds (docs/COMPARE_STATS.md "The unit chosen by cost");
    the pilot is the planned units (at least MIN_UNITS, at most the ini's pilot)."""
    design = Design(restart_rounds=None, budget_s=None, pilot_units=12)
    costs = Costs(120.0, 1.5, 0.9)
    choice = choose_unit("chat-1u", costs, TPUT, design, SessionBudget(None, None, 1), elapsed_s=0.0)
    own = plan("chat-1u", costs, Noise(0.01, 0.035), TPUT)
    assert choice.plan.unit_rounds == own.unit_rounds >= 16 and choice.plan.units == own.units
    assert choice.pilot_units == min(max(own.units, MIN_UNITS), 12)
    assert choice.table[0] == "llmbench compare plan: no time limit per scenario:"
    assert choice.table[1].startswith(f"  chat-1u: {own.units} units of {own.unit_rounds} rounds, ~")
    assert "detects >= 3%" in choice.table[1] and "start 120 s, round 1.5 s measured" in choice.table[1]


def test_a_fast_start_keeps_short_units():
    design = Design(restart_rounds=None, budget_s=None)
    choice = choose_unit("chat-1u", Costs(1.4, 1.5, 0.9), TPUT, design, SessionBudget(None, None, 1), elapsed_s=0)
    assert choice.plan.unit_rounds <= 6


def test_a_session_budget_is_split_and_said_up_front():
    """An hour for 3 scenarios at a 60-s start: this one gets a third, planned for what that buys; the
    table names the scenarios to come."""
    design = Design(restart_rounds=None, budget_s=None)
    budget = SessionBudget(3600.0, None, 3)
    choice = choose_unit("chat-1u", Costs(120.0, 1.5, 0.9), TPUT, design, budget, elapsed_s=30.0)
    assert choice.budget_s == 1200.0
    assert choice.plan.seconds <= 1200.0 - 30.0 and choice.plan.units >= MIN_UNITS
    assert choice.table[0].startswith("llmbench compare plan: 60 min of the session's 60 min left for 3 scenario(s)")
    assert choice.table[-1].startswith("  2 scenario(s) to come: ~20 min each")
    assert math.isfinite(choice.plan.detectable) and choice.plan.detectable < 0.05


def test_a_budget_below_the_floor_is_a_cap_and_says_what_the_floor_costs():
    """Issue 57: 100 s cannot hold 4 units at a 120-s start: no unit is planned, the pilot is 0 (the runner
    stops), and the table says "budget too small to judge" with the floor's cost (4 x (120 + 2 x 1.5) s)."""
    design = Design(restart_rounds=None, budget_s=100.0)
    choice = choose_unit("chat-1u", Costs(120.0, 1.5), TPUT, design, SessionBudget(None, 100.0, 1), elapsed_s=0)
    assert choice.plan.units == 0 and choice.pilot_units == 0 and not choice.plan.reached
    assert choice.table[1].startswith(
        "  chat-1u: not judged (budget too small to judge: the 4-unit floor would cost ~8 min) [start 120 s"
    )


def test_the_floor_asked_for_is_played_over_budget_and_said():
    design = Design(restart_rounds=None, budget_s=100.0, force_floor=True)
    choice = choose_unit("chat-1u", Costs(120.0, 1.5), TPUT, design, SessionBudget(None, 100.0, 1), elapsed_s=0)
    assert (choice.plan.units, choice.plan.unit_rounds, choice.pilot_units) == (MIN_UNITS, 2, MIN_UNITS)
    assert "over budget: the 4-unit floor, ~8 min (--llmbench-compare-floor)" in choice.plan.note


def test_max_rounds_bounds_the_unit_so_that_min_units_fit():
    design = Design(restart_rounds=None, budget_s=None, max_rounds=8)
    choice = choose_unit("s", Costs(120.0, 1.5), TPUT, design, SessionBudget(None, None, 1), elapsed_s=0)
    assert choice.plan.unit_rounds == 2 and choice.plan.units * choice.plan.unit_rounds <= 8


def test_the_planned_metric_is_throughput_when_it_decides():
    metric, target = target_for(
        ("median_tpot_ms", "output_throughput"), {"timing": 0.02}, detect=None, ignore=None, power=0.95
    )
    assert metric == "output_throughput" and target.alpha == 0.02 and target.higher_is_better
    assert target_for(("accept_length",), {"quality": 0.01}, detect=None, ignore=None, power=0.95) is None


def test_the_runner_times_the_first_pair_then_plays_the_chosen_unit():
    """The first pair plays one ABBA pair of rounds, the chooser gets its costs, and every unit, the first
    included, has the chosen length; each unit is a fresh pair (two starts), and each block names its unit."""
    servers, log, _ = _servers(keep_both=True)
    clock = Clock(block_s=2.0)
    seen: list = []

    def run_block(server, scenario, prompts):
        clock.now += clock.block_s
        return _result(100.0 if server.role == "reference" else 90.0, [0.1, 0.2, 0.3][: len(prompts)])

    def choose(costs: Costs) -> tuple[int, int]:
        seen.append(costs)
        return 6, 4

    design = Design(restart_rounds=None, warmup_rounds=1, pilot_units=12, max_rounds=400, budget_s=None)
    judge = Judge(("output_throughput",), {"timing": 0.05, "quality": 0.05}, design=design)
    sc = Scenario("s", dataset="prompts", output_len=8, num_prompts=3, warmup=0)
    rounds, comps, outcome = run_rounds(
        servers, sc, design=design, judge=judge, prompts=["a", "b", "c"], run_block=run_block,
        choose_unit=choose, clock=clock,
    )  # fmt: skip
    # one round: two blocks of 2 s; unit 0 kept the warm-up's pair, so its start is the arms' recorded ones
    assert len(seen) == 1 and seen[0].round_s == 4.0 and seen[0].start_s == 2.0 and seen[0].warmup_s == 0.0
    assert rounds.unit_rounds == 6 and outcome.plan.unit_rounds == 6
    assert outcome.rounds % 6 == 0 and outcome.rounds >= 4 * 6
    judged = [b for b in rounds.blocks if not b.warmup]
    assert [b.unit for b in judged if b.role == "reference"] == [r // 6 for r in range(outcome.rounds)]
    assert all(b.wall_s == 2.0 for b in judged)
    starts = [e for e in log if e[0] == "start"]
    assert len(starts) == 1 + 2 * (outcome.rounds // 6 - 1)  # the warm-up's reference, then two per later unit
    assert {s.unit for s in servers.starts} == {None, *range(1, outcome.rounds // 6)}
    assert comps and comps[0].verdict == "regressed"  # 0.9x, noise-free


def test_a_fixed_unit_never_asks_the_chooser():
    servers, _, _ = _servers(keep_both=True)
    called: list = []
    design = Design(restart_rounds=2, warmup_rounds=0, pilot_units=4, max_rounds=8, budget_s=None)
    judge = Judge((), {"timing": 0.05, "quality": 0.05}, design=design)
    sc = Scenario("s", dataset="prompts", output_len=8, num_prompts=3, warmup=0)
    rounds, _, outcome = run_rounds(
        servers, sc, design=design, judge=judge, prompts=["a", "b", "c"],
        run_block=lambda s, sc_, p: _result(100.0, [0.1, 0.2, 0.3]), choose_unit=lambda c: called.append(c) or (8, 4),
        clock=Clock(),
    )  # fmt: skip
    assert called == [] and rounds.unit_rounds == 2 and outcome.rounds == 8


def test_pilot_components_split_the_offset_from_the_rounds():
    """Units whose rounds share an offset: the between SD is found, the within SD is the rounds' own."""
    rng = np.random.default_rng(3)
    blocks = []
    for u in range(8):
        offset = 0.05 * rng.standard_normal()
        for r in range(u * 6, u * 6 + 6):
            ratio = math.exp(offset + 0.01 * rng.standard_normal())
            blocks.append(Block(r, "reference", _result(100.0, [0.1]), unit=u))
            blocks.append(Block(r, "candidate", _result(100.0 * ratio, [0.1]), unit=u))
    c = pilot_components(blocks, 6)
    assert c["sd_between"] > 0.02 and 0.005 < c["sd_within"] < 0.02 and c["df_between"] == 7
    assert pilot_components(blocks, 1) == {}


# --- a session budget across scenarios (allocate) ---


def _matrix() -> list[PlanScenario]:
    noise = Noise(0.01, H200_SD_WITHIN)
    return [
        PlanScenario("chat-1u", h200(60.0), noise, TARGET),
        PlanScenario("chat-4u", h200(60.0), Noise(0.01, 0.05), TARGET),
        PlanScenario("prompt120k-1u", Costs.of_arms(60.0, 60.0, 20.0, warmup_s=10.0), noise, TARGET),
    ]


def test_a_budget_that_holds_every_plan_gives_each_its_own():
    scenarios = _matrix()
    own = [plan(s.name, s.costs, s.noise, s.target) for s in scenarios]
    a = allocate(sum(p.seconds for p in own) + 100.0, scenarios)
    assert [p.units for p in a.plans] == [p.units for p in own]
    assert a.rule == "each scenario's own detect"


def test_a_short_budget_is_shared_to_equalize_the_detectable_change_and_sums_to_it():
    scenarios = _matrix()
    own = sum(plan(s.name, s.costs, s.noise, s.target).seconds for s in scenarios)
    budget = own / 3
    a = allocate(budget, scenarios)
    assert [p.name for p in a.plans] == ["chat-1u", "chat-4u", "prompt120k-1u"]
    assert a.seconds <= budget
    assert a.seconds >= 0.9 * budget  # spent, not left over
    found = [p.detectable for p in a.plans]
    assert all(d > 0.03 for d in found)
    assert max(found) - min(found) < 0.25 * (max(found) - 0.01)  # one blind spot, within unit granularity
    table = a.table()
    assert table[0].startswith("plan for ") and "equalize the detectable change" in table[0]
    assert len(table) == 4


def test_a_budget_too_small_for_every_floor_names_the_scenario_left_out():
    scenarios = _matrix()
    a = allocate(1200.0, scenarios)  # 4 units: prompt120k ~680 s, each chat ~496 s
    left = [p for p in a.plans if p.units == 0]
    assert [p.name for p in left] == ["prompt120k-1u"]
    assert "budget too small to judge" in left[0].describe()
    assert a.seconds <= 1200.0
