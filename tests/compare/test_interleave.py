"""ABBA order, the moving prompt window, warm-up/pilot/planned rounds within a budget, the server policy
(both up / per block) and the paired views.

The servers here are plain recording objects (no engine): these tests pin the orchestration; the
real llama-server runs in test_session_integration.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from pytest_llmbench.compare.arms import ArmOptions, arms_from_options
from pytest_llmbench.compare.interleave import (
    ArmServers,
    block_window,
    round_order,
    run_rounds,
    start_first,
)
from pytest_llmbench.compare.judging import Judge
from pytest_llmbench.compare.power import MIN_UNITS, Design
from pytest_llmbench.compare.rounds import Block, Rounds
from pytest_llmbench.compare.stats import MIN_DF
from pytest_llmbench.config import load_config_file
from pytest_llmbench.registry import Registry
from pytest_llmbench.workload.records import RequestRecord
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult

from .test_arms import CPU_YAML

REGISTRY = Registry.builtin()

SC = Scenario("s", dataset="prompts", output_len=8, num_prompts=3, warmup=0)


@dataclass
class Process:
    up: bool = True


@dataclass
class RecordingServer:
    role: str
    log: list = field(default_factory=list)
    startup_s: float = 1.0
    info: dict = field(default_factory=dict)
    port: int = 0
    log_path: object = None
    not_responding: object = None
    _client: object = None
    gpu_ids: tuple = ()
    handle: Process = field(default_factory=Process)

    def alive(self):
        return self.handle.up

    def stop(self):
        self.log.append(("stop", self.role))
        self.handle.up = False


def _pair():
    cfg = {c.name: c for c in load_config_file(CPU_YAML)}["smol-nospec"]
    return arms_from_options(cfg, ArmOptions.parse(reference_args="-t 1"), REGISTRY)


def _result(tokens_per_s: float, ttfts: list[float | None]) -> ScenarioResult:
    recs = [
        RequestRecord(index=i, ok=t is not None, ttft_s=t, e2e_s=(t or 0) + 1, completion_tokens=8)
        for i, t in enumerate(ttfts)
    ]
    return ScenarioResult(SC, recs, {"output_throughput": tokens_per_s, "duration": 1.0, "failed": 0})


def block_order(rounds: int, unit_rounds: int = 2) -> list[tuple[int, str]]:
    """(round, role) of every block of ``rounds`` rounds in units of ``unit_rounds``: A B | B A | B A | A B | …"""
    return [(r, role) for r in range(rounds) for role in round_order(r, unit_rounds)]


def test_abba_then_baab_from_unit_to_unit():
    """Issue 37 finding 6: every unit played the reference first (ABBA, ABBA, ...). Pairs of rounds now
    mirror each other, so a server pair of 2 rounds is ABBA and the next BAAB."""
    assert round_order(0) == ("reference", "candidate") and round_order(1) == ("candidate", "reference")
    assert [role[0] for _, role in block_order(8)] == list("rccrcrrc" * 2)
    firsts = [round_order(r)[0] for r in range(8)]
    assert firsts.count("reference") == firsts.count("candidate")
    assert [round_order(2 * u)[0] for u in range(4)] == ["reference", "candidate"] * 2  # a unit's first block


@pytest.mark.parametrize("unit_rounds", [2, 4, 6, 8, 16, 24])
def test_a_units_first_block_alternates_at_every_unit_length_the_planner_picks(unit_rounds):
    """Issue 55 finding 4: the pattern repeated every 4 rounds, so units of 4, 8, 16 or 24 rounds always
    played the reference first on each fresh pair. Now each unit's first block alternates, each unit is
    balanced, and a unit of 2 rounds is still ABBA then BAAB."""
    played = _run(
        _servers(keep_both=True)[0],
        decide=(),
        design=Design(
            restart_rounds=unit_rounds, warmup_rounds=0, pilot_units=4, max_rounds=4 * unit_rounds, budget_s=None
        ),
    )[0]
    firsts: dict[int, str] = {}
    for b in played.blocks:  # blocks are added in play order: a round's first block comes first
        firsts.setdefault(b.round, b.role)
    units = 4
    assert [firsts[u * unit_rounds] for u in range(units)] == ["reference", "candidate"] * 2
    for u in range(units):
        roles = [firsts[r] for r in range(u * unit_rounds, (u + 1) * unit_rounds)]
        assert roles.count("reference") == roles.count("candidate")


def test_the_arm_that_starts_first_alternates_and_every_block_records_it():
    """Issue 37 finding 6: every unit restarted the candidate, then the reference. The start order now
    alternates unit by unit, and each block records it (experiments/compare/order_lab.py measures the effect)."""
    assert [start_first(u) for u in range(4)] == ["candidate", "reference"] * 2
    servers, log, _ = _servers(keep_both=True)
    design = Design(restart_rounds=2, warmup_rounds=0, pilot_units=4, max_rounds=8, budget_s=None)
    rounds, *_ = _run(servers, decide=(), design=design)
    starts = [e[1] for e in log if e[0] == "start"]
    assert starts == ["candidate", "reference", "reference", "candidate"] * 2
    by_unit = {rounds.unit_of(b.round): b.started_first for b in rounds.blocks}
    assert by_unit == {0: "candidate", 1: "reference", 2: "candidate", 3: "reference"}


def _servers(keep_both: bool):
    log: list = []
    cand = RecordingServer("candidate", log)

    def start(arm):
        log.append(("start", arm.role))
        return RecordingServer(arm.role, log)

    return ArmServers(_pair(), cand, start, keep_both=keep_both), log, cand


class Clock:
    """Each block takes ``block_s`` seconds of this clock (the budget is tested without waiting)."""

    def __init__(self, block_s: float = 1.0) -> None:
        self.now, self.block_s = 0.0, block_s

    def __call__(self) -> float:
        return self.now


def _run(
    servers,
    *,
    design=None,
    speeds=(100.0, 90.0),
    decide=("output_throughput",),
    alpha=0.05,
    noise=0.001,
    block_prompts=None,
    clock=None,
    prompts=("a", "b", "c", "d"),
):
    seen = []
    rng = np.random.default_rng(0)
    clock = clock or Clock()

    def run_block(server, scenario, prompts):
        seen.append((server.role, tuple(prompts), scenario.warmup))
        servers_log = getattr(server, "log", None)
        if servers_log is not None:
            servers_log.append(("block", server.role))
        clock.now += clock.block_s
        speed = speeds[0] if server.role == "reference" else speeds[1]
        return _result(speed * (1 + noise * rng.standard_normal()), [0.1, 0.2, 0.3][: len(prompts)])

    design = design or Design(restart_rounds=0, warmup_rounds=1, pilot_units=4, max_rounds=4, budget_s=None)
    judge = Judge(decide, {"timing": alpha, "quality": alpha}, design=design)
    sc = Scenario("s", dataset="prompts", output_len=8, num_prompts=3, warmup=2)
    rounds, comps, outcome = run_rounds(
        servers,
        sc,
        design=design,
        judge=judge,
        prompts=list(prompts),
        run_block=run_block,
        block_prompts=block_prompts,
        clock=clock,
    )
    return rounds, comps, seen, outcome


def test_both_up_starts_the_reference_once_and_sends_the_same_prompts_to_both_arms():
    servers, log, cand = _servers(keep_both=True)
    _rounds, _comps, seen, outcome = _run(servers, speeds=(100.0, 100.0), decide=())
    # a warm-up round (with the scenario's warmup requests), then the pilot: ABBA (max_rounds 4 caps it)
    assert [r[0] for r, *_ in seen] == list("rcrccrcrrc") and outcome.rounds == 4
    assert [w for *_, w in seen] == [2, 2] + [0] * 8
    assert {p for _, p, _ in seen} == {("a", "b", "c")}  # num_prompts=3, blocks of all three
    assert log.count(("start", "reference")) == 1 and ("stop", "candidate") not in log
    assert cand.alive() and servers.reference is not None
    servers.close()
    assert ("stop", "reference") in log and servers.reference is None


def test_blocks_send_a_window_that_moves_through_the_prompts():
    assert block_window(0, 2, 5) == [0, 1] and block_window(1, 2, 5) == [2, 3] and block_window(2, 2, 5) == [4, 0]
    assert block_window(-1, 2, 5) == [3, 4]  # the warm-up round
    servers, _, _ = _servers(keep_both=True)
    rounds, _, seen, _ = _run(servers, decide=(), block_prompts=2, prompts=("a", "b", "c"))
    assert [p for _, p, _ in seen][2:6] == [("a", "b")] * 2 + [("c", "a")] * 2  # both arms, same window
    assert rounds.blocks[2].prompt_ids == [0, 1] and rounds.blocks[4].prompt_ids == [2, 0]


def test_per_block_mode_has_one_arm_up_at_a_time_and_restarts_the_candidate_in_place():
    servers, log, cand = _servers(keep_both=False)
    _run(
        servers,
        speeds=(100.0, 100.0),
        decide=(),
        design=Design(restart_rounds=0, warmup_rounds=0, pilot_units=4, budget_s=None),
    )
    events = [e for e in log if e[0] != "block"]
    # r c | c r: the candidate stops before the reference starts; each block's server stops after it
    assert events[:3] == [("stop", "candidate"), ("start", "reference"), ("stop", "reference")]
    assert ("start", "candidate") in events
    assert cand.alive(), "the test's llm_server object is running again after the rounds"
    assert len([s for s in servers.starts if s.role == "reference"]) == 4  # one start per reference block


def test_the_pilot_plans_the_rounds_and_a_clear_change_still_runs_them():
    quiet, _, _ = _servers(keep_both=True)
    rounds, comps, _, outcome = _run(
        quiet, speeds=(100.0, 50.0), design=Design(restart_rounds=0, pilot_units=4, budget_s=None)
    )
    assert comps[0].verdict == "regressed" and outcome.rounds == 4 and outcome.stop == "planned"
    noisy, _, _ = _servers(keep_both=True)
    rounds, comps, _, outcome = _run(
        noisy,
        speeds=(100.0, 100.0),
        noise=0.02,
        design=Design(restart_rounds=0, pilot_units=4, max_rounds=200, budget_s=None),
    )
    assert outcome.plan.needed > 4 and len(rounds.complete) == outcome.rounds == outcome.plan.rounds
    assert comps[0].df in (3, outcome.rounds - 1) and comps[0].n == outcome.rounds  # Stein's or the final SD's


def test_the_budget_caps_the_rounds_and_the_outcome_says_underpowered():
    servers, _, _ = _servers(keep_both=True)
    clock = Clock(block_s=1.0)  # a round: 2 s
    design = Design(restart_rounds=0, warmup_rounds=1, pilot_units=4, max_rounds=200, budget_s=30)
    rounds, _comps, _, outcome = _run(servers, speeds=(100.0, 100.0), noise=0.05, design=design, clock=clock)
    assert outcome.plan.underpowered and outcome.stop == "underpowered"
    assert outcome.rounds == len(rounds.complete) == outcome.plan.limit == 14  # (30 s - 2 s warm-up) / 2 s
    assert clock.now <= 30
    assert outcome.describe().startswith("underpowered: needs ~") and "the budget allows 14" in outcome.describe()


def test_with_the_floor_asked_for_a_short_budget_never_cuts_the_pilot_below_it():
    """Issue 37 finding 2: the budget cut a pilot of server pairs to 2 units (df 1), and 2 units said
    "regressed". With ``force_floor`` (--llmbench-compare-floor) the pilot runs MIN_UNITS units whatever
    the budget, and the test has MIN_DF df."""
    servers, _, _ = _servers(keep_both=True)
    design = Design(restart_rounds=2, warmup_rounds=1, pilot_units=12, budget_s=5, force_floor=True)
    rounds, comps, _, outcome = _run(servers, design=design, clock=Clock(block_s=1.0))
    assert len(rounds.complete) == 2 * MIN_UNITS and comps[0].n == MIN_UNITS and comps[0].df == MIN_DF
    assert outcome.stop == "underpowered" or outcome.rounds == 2 * MIN_UNITS


def test_the_budget_is_a_cap_below_the_floor_of_server_pairs():
    """Issue 57: the same budget without the floor asked for stops one unit past it, says what the floor
    would cost, and judges nothing (never "regressed" on one unit)."""
    servers, _, _ = _servers(keep_both=True)
    design = Design(restart_rounds=2, warmup_rounds=1, pilot_units=12, budget_s=5)
    clock = Clock(block_s=1.0)
    rounds, comps, _, outcome = _run(servers, design=design, clock=clock)
    assert outcome.stop == "too-small" and len(rounds.complete) < 2 * MIN_UNITS
    assert clock.now <= 5 + 2 * 2  # the budget and at most one unit (2 rounds of 2 one-second blocks)
    assert outcome.describe().startswith(f"budget too small to judge: the {MIN_UNITS}-unit floor would cost ~")
    assert all(c.verdict == "inconclusive" for c in comps)


def test_with_the_floor_asked_for_a_short_budget_still_judges_two_abba_pairs():
    servers, _, _ = _servers(keep_both=True)
    design = Design(restart_rounds=0, warmup_rounds=1, pilot_units=8, budget_s=5, force_floor=True)
    rounds, comps, _, _outcome = _run(servers, design=design, clock=Clock(block_s=1.0))
    assert len(rounds.complete) == 4 and comps[0].n == 4


def test_the_budget_is_a_cap_below_the_floor_of_rounds():
    """Issue 57, the pair kept up (the round is the unit): the same budget without the floor asked for stops
    within one unit of it and judges nothing."""
    servers, _, _ = _servers(keep_both=True)
    design = Design(restart_rounds=0, warmup_rounds=1, pilot_units=8, budget_s=5)
    clock = Clock(block_s=1.0)
    rounds, comps, _, outcome = _run(servers, design=design, clock=clock)
    assert outcome.stop == "too-small" and len(rounds.complete) < 4 and clock.now <= 5 + 2
    assert "budget too small to judge" in outcome.describe() and all(c.verdict == "inconclusive" for c in comps)


def test_rounds_come_in_whole_abba_pairs():
    """An odd count leaves one arm first once more; planned, capped and pilot counts are all even."""
    servers, _, _ = _servers(keep_both=True)
    design = Design(restart_rounds=0, warmup_rounds=0, pilot_units=5, max_rounds=11, budget_s=None)
    rounds, _comps, seen, outcome = _run(servers, speeds=(100.0, 100.0), noise=0.03, design=design)
    assert outcome.plan.pilot == 4 and len(rounds.complete) % 2 == 0 and len(rounds.complete) <= 10
    firsts = [seen[i][0] for i in range(0, len(seen), 2)]
    assert firsts.count("reference") == firsts.count("candidate")


def test_request_values_pair_by_round_and_prompt_and_drop_failed_pairs():
    rounds = Rounds(SC)
    rounds.add(Block(0, "reference", _result(1, [0.1, 0.2, None])))
    rounds.add(Block(0, "candidate", _result(1, [0.15, None, 0.3])))
    rounds.add(Block(1, "candidate", _result(1, [0.5, 0.6, 0.7])))  # its reference block never ran
    ref, cand, round_of = rounds.request_values(lambda r: r.ttft_s)
    assert (ref, cand, round_of) == ([0.1], [0.15], [(0, 0)])
    assert rounds.complete == [0] and rounds.prompts_used() == 9


def test_merged_candidate_result_renumbers_requests_and_sums_durations_without_the_warmup():
    rounds = Rounds(SC)
    for r in range(-1, 2):
        rounds.add(Block(r, "candidate", _result(1, [0.1, 0.2, 0.3])))
        rounds.add(Block(r, "reference", _result(1, [0.1, 0.2, 0.3])))
    merged = rounds.merged("candidate")
    assert [r.index for r in merged.records] == list(range(6))
    assert merged.metrics["duration"] == pytest.approx(2.0) and merged.metrics["completed"] == 6
    assert merged.metrics["rounds"] == 2


def test_both_up_restarts_both_arms_for_every_server_pair_and_warms_each_new_pair():
    """Two starts of one build can differ for a whole session (×1.05 TPOT once in 20 CPU A/A sessions);
    restarting both arms every unit makes that difference part of the noise the tests measure."""
    servers, log, cand = _servers(keep_both=True)
    design = Design(restart_rounds=2, warmup_rounds=1, pilot_units=4, max_rounds=6, budget_s=None)
    rounds, _comps, seen, outcome = _run(servers, speeds=(100.0, 100.0), decide=(), design=design)
    assert outcome.rounds == 6 and rounds.unit_rounds == 2
    # warm-up BA on the first pair, which unit 0 keeps (issue 38: two starts saved, the warm-up is never
    # judged); then per pair: stop both, start both, AB (warmup requests first) | BA
    assert [w for *_, w in seen] == [2, 2] + [0, 0, 0, 0] + [2, 2, 0, 0] * 2
    events = [e for e in log if e[0] != "block"]
    stop = [("stop", "reference"), ("stop", "candidate")]
    ref_first, cand_first = (
        [("start", "reference"), ("start", "candidate")],
        [("start", "candidate"), ("start", "reference")],
    )
    # the first event: the reference's start at the warm-up (the candidate, the test's server, was up
    # first: start_first(0)); then the start order alternates unit by unit
    assert events == [("start", "reference"), *stop, *ref_first, *stop, *cand_first]
    assert log.count(("start", "reference")) == 3 and cand.alive()
    assert [rounds.unit_of(r) for r in rounds.complete] == [0, 0, 1, 1, 2, 2]
    assert [b.started_first for b in rounds.blocks if b.round >= 0 and b.role == "reference"] == [
        "candidate", "candidate", "reference", "reference", "candidate", "candidate"
    ]  # fmt: skip


def test_per_block_servers_keep_the_round_as_the_unit():
    servers, _, _ = _servers(keep_both=False)
    rounds, *_ = _run(servers, decide=(), design=Design(restart_rounds=2, pilot_units=4, budget_s=None))
    assert rounds.unit_rounds == 1 and rounds.unit_name == "rounds"


def test_server_pair_values_are_each_arms_geometric_mean_over_the_pairs_rounds():
    rounds = Rounds(SC, unit_rounds=2)
    for r, (a, b) in enumerate([(100, 90), (100, 110), (50, 40), (200, 160)]):
        rounds.add(Block(r, "reference", _result(a, [0.1, 0.2])))
        rounds.add(Block(r, "candidate", _result(b, [0.1 * b / a, 0.2])))
    ref, cand = rounds.round_values("output_throughput")
    assert ref == pytest.approx([100.0, 100.0]) and cand == pytest.approx([(90 * 110) ** 0.5, (40 * 160) ** 0.5])
    _, _, where = rounds.request_values(lambda rec: rec.ttft_s)
    assert sorted({rounds.unit_of(r) for r, _ in where}) == [0, 1]


def test_the_pilot_counts_server_pairs_and_the_test_runs_over_them():
    servers, _, _ = _servers(keep_both=True)
    design = Design(restart_rounds=2, warmup_rounds=0, pilot_units=4, max_rounds=200, budget_s=None)
    _rounds, comps, _, outcome = _run(servers, speeds=(100.0, 100.0), noise=0.05, design=design)
    assert outcome.plan.pilot == 8 and outcome.plan.unit_rounds == 2 and outcome.rounds % 2 == 0
    widened = "units not independent" in comps[0].method  # this seed's units drift (lag-1 r 0.41): a third test
    widened |= "serial-dependence-robust SE binds" in comps[0].method  # or the HAC t (stats/ttest.py) binds
    assert (widened or comps[0].df in (3, outcome.rounds // 2 - 1)) and comps[0].n == outcome.rounds // 2
    assert comps[0].method.startswith(f"log-ratio t over {outcome.rounds // 2} server pairs")
    assert "(spread: the wider of a pilot of 4 server pairs and the final SD)" in comps[0].method


def test_a_failed_block_in_a_server_pair_still_reaches_the_ratio_test_as_zero():
    """A block with 0 tok/s is not averaged away: its pair's value is 0 and the ratio test names it."""
    rounds = Rounds(SC, unit_rounds=2)
    for r, (a, b) in enumerate([(100, 90), (100, 0), (100, 95), (100, 97)]):
        rounds.add(Block(r, "reference", _result(a, [0.1])))
        rounds.add(Block(r, "candidate", _result(b, [0.1])))
    _ref, cand = rounds.round_values("output_throughput")
    assert cand[0] == 0 and cand[1] == pytest.approx((95 * 97) ** 0.5)
    judge = Judge(("output_throughput",), {"timing": 0.01, "quality": 0.01}, design=Design())
    with pytest.raises(ValueError, match="a ratio needs positive values"):
        judge.compare("output_throughput", rounds, judge.plan(rounds, seconds_per_round=1.0, elapsed_s=0.0))
