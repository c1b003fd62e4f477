"""ABBA order, same prompts per block, the server policy (both up / per block) and the paired views.

The servers here are plain recording objects (no engine): these tests pin the orchestration; the
real llama-server runs in test_session_integration.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from pytest_llmbench.compare.arms import ArmOptions, arms_from_options
from pytest_llmbench.compare.interleave import ArmServers, Block, Rounds, block_order, round_order, run_rounds
from pytest_llmbench.compare.judging import FamilyPlans, judge_all
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
    recs = [RequestRecord(index=i, ok=t is not None, ttft_s=t, e2e_s=(t or 0) + 1, completion_tokens=8)
            for i, t in enumerate(ttfts)]
    return ScenarioResult(SC, recs, {"output_throughput": tokens_per_s, "duration": 1.0, "failed": 0})


def test_abba_order():
    assert round_order(0) == ("reference", "candidate") and round_order(1) == ("candidate", "reference")
    assert [role[0] for _, role in block_order(4)] == list("rccrrccr")


def _servers(keep_both: bool):
    log: list = []
    cand = RecordingServer("candidate", log)

    def start(arm):
        log.append(("start", arm.role))
        return RecordingServer(arm.role, log)

    return ArmServers(_pair(), cand, start, keep_both=keep_both), log, cand


def _run(servers, *, max_rounds=4, speeds=(100.0, 90.0), decide=("output_throughput",), alpha=0.05, noise=0.001):
    seen = []
    rng = np.random.default_rng(0)

    def run_block(server, scenario, prompts):
        seen.append((server.role, tuple(prompts)))
        servers_log = getattr(server, "log", None)
        if servers_log is not None:
            servers_log.append(("block", server.role))
        speed = speeds[0] if server.role == "reference" else speeds[1]
        return _result(speed * (1 + noise * rng.standard_normal()), [0.1, 0.2, 0.3])

    plans = FamilyPlans({"timing": alpha, "quality": alpha}, max_looks=max_rounds, min_looks=2)
    rounds, comps = run_rounds(servers, SC, plan=plans, judge=judge_all(decide, plans), prompts=["a", "b", "c", "d"],
                               run_block=run_block)
    return rounds, comps, seen


def test_both_up_starts_the_reference_once_and_sends_the_same_prompts():
    servers, log, cand = _servers(keep_both=True)
    rounds, comps, seen = _run(servers, max_rounds=3, speeds=(100.0, 100.0), decide=())
    assert [r for r, _ in seen] == ["reference", "candidate", "candidate", "reference"]  # stopped: nothing to decide
    assert {p for _, p in seen} == {("a", "b", "c")}  # num_prompts=3: the same three on every block
    assert log.count(("start", "reference")) == 1 and ("stop", "candidate") not in log
    assert cand.alive() and servers.reference is not None
    servers.close()
    assert ("stop", "reference") in log and servers.reference is None


def test_per_block_mode_has_one_arm_up_at_a_time_and_restarts_the_candidate_in_place():
    servers, log, cand = _servers(keep_both=False)
    _run(servers, max_rounds=2, speeds=(100.0, 100.0), decide=())
    events = [e for e in log if e[0] != "block"]
    # r c | c r: the candidate stops before the reference starts; each block's server stops after it
    assert events[:3] == [("stop", "candidate"), ("start", "reference"), ("stop", "reference")]
    assert ("start", "candidate") in events
    assert cand.alive(), "the test's llm_server object is running again after the rounds"
    assert len([s for s in servers.starts if s.role == "reference"]) == 2  # one start per reference block


def test_rounds_stop_once_decided_and_run_to_the_maximum_when_not():
    servers, _, _ = _servers(keep_both=True)
    rounds, comps, _ = _run(servers, max_rounds=8, speeds=(100.0, 50.0))  # halved: decided early
    assert comps[0].verdict == "regressed" and len(rounds.complete) < 8
    servers, _, _ = _servers(keep_both=True)
    rounds, comps, _ = _run(servers, max_rounds=4, speeds=(100.0, 97.0), noise=0.01)  # 3% slower in 1% noise
    assert len(rounds.complete) == 4 and comps[0].verdict == "inconclusive"  # at the margin: never decided


def test_rounds_end_early_when_no_verdict_is_reachable():
    """Futility: 4% slower in 5% noise cannot be decided by round 20; the rounds end, inconclusive."""
    servers, _, _ = _servers(keep_both=True)
    rounds, comps, _ = _run(servers, max_rounds=20, speeds=(100.0, 96.0), noise=0.05)
    assert len(rounds.complete) < 20 and comps[0].verdict == "inconclusive"


def test_request_values_pair_by_round_and_prompt_and_drop_failed_pairs():
    rounds = Rounds(SC)
    rounds.add(Block(0, "reference", _result(1, [0.1, 0.2, None])))
    rounds.add(Block(0, "candidate", _result(1, [0.15, None, 0.3])))
    rounds.add(Block(1, "candidate", _result(1, [0.5, 0.6, 0.7])))  # its reference block never ran
    ref, cand, round_of = rounds.request_values(lambda r: r.ttft_s)
    assert (ref, cand, round_of) == ([0.1], [0.15], [(0, 0)])
    assert rounds.complete == [0] and rounds.prompts_used() == 9


def test_merged_candidate_result_renumbers_requests_and_sums_durations():
    rounds = Rounds(SC)
    for r in range(2):
        rounds.add(Block(r, "candidate", _result(1, [0.1, 0.2, 0.3])))
        rounds.add(Block(r, "reference", _result(1, [0.1, 0.2, 0.3])))
    merged = rounds.merged("candidate")
    assert [r.index for r in merged.records] == list(range(6))
    assert merged.metrics["duration"] == pytest.approx(2.0) and merged.metrics["completed"] == 6
    assert merged.metrics["rounds"] == 2
