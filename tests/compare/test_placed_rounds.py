"""Disjoint placements as the runner plays them (issue 57): each arm on its own set, the sets swapped between
the two halves of every unit so the set effect cancels, blocks interleaved or at once; the set effect
estimated from the halves; the sets parsed with errors that name the option; CPU sets pinned for real.

The servers are recording objects whose speed depends on the set they run on (a slower set B), so the
cancellation is checked on the runner's own rounds and judging; pinning runs on a real process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from pytest_llmbench.compare.interleave import ArmServers, run_rounds
from pytest_llmbench.compare.judging import Judge
from pytest_llmbench.compare.options import parse_sets
from pytest_llmbench.compare.placement import set_effect
from pytest_llmbench.compare.power import Design
from pytest_llmbench.compare.servers import pin
from pytest_llmbench.workload.scenario import Scenario

from .test_interleave import RecordingServer, _pair, _result

SETS = (("0",), ("1",))
SLOW_B = 0.90  # a server on set B runs at 90% of its speed on set A


@dataclass
class OnSet:
    """A process handle that knows its set (a candidate restarted in place takes the fresh handle)."""

    devices: tuple[str, ...] | None = None
    up: bool = True


def _placed(parallel: bool = False):
    log: list = []
    cand = RecordingServer("candidate", log, handle=OnSet())

    def start(arm):
        log.append(("start", arm.role, arm.devices))
        return RecordingServer(arm.role, log, handle=OnSet(arm.devices))

    servers = ArmServers(_pair(), cand, start, keep_both=False, sets=SETS, device_kind="cpu", parallel=parallel)
    return servers, log


def _play(servers, *, on_block=None, design=None, speeds=(100.0, 100.0)):
    design = design or Design(restart_rounds=4, warmup_rounds=1, pilot_units=6, max_rounds=24, budget_s=None)
    judge = Judge(("output_throughput",), {"timing": 0.01, "quality": 0.01}, design=design)
    sc = Scenario("s", dataset="prompts", output_len=8, num_prompts=3, warmup=0)

    def run_block(server, scenario, prompts):
        if on_block is not None:
            on_block(server)
        base = speeds[0] if server.role == "reference" else speeds[1]
        speed = base * (SLOW_B if server.handle.devices == SETS[1] else 1.0)
        return _result(speed, [0.1, 0.2, 0.3][: len(prompts)])

    return run_rounds(servers, sc, design=design, judge=judge, prompts=["a", "b", "c"], run_block=run_block)


def test_the_arms_swap_sets_between_the_halves_of_every_unit_and_the_set_effect_cancels():
    """Same build on both arms, set B 10% slower: without the swap the candidate (on B) would read 10% slower
    and regress; with it each unit is half on each set, the comparison reads x1.000 and equivalent, and the
    set effect is measured as x0.90."""
    servers, log = _placed()
    assert servers.keep_both and servers.halves == 2  # disjoint sets keep both arms up
    rounds, comps, outcome = _play(servers)
    judged = [b for b in rounds.blocks if not b.warmup]
    assert {b.devices for b in rounds.blocks} == set(SETS)
    for b in judged:  # rounds 0-1 of a unit: candidate on B; rounds 2-3: swapped
        first_half = b.round % 4 < 2
        on = SETS[1] if (b.role == "candidate") == first_half else SETS[0]
        assert b.devices == on, (b.round, b.role, b.devices)
    starts = [e for e in log if e[0] == "start"]
    assert all(devices in SETS for _, _, devices in starts)
    (c,) = comps
    assert c.verdict == "equivalent" and c.estimate == pytest.approx(1.0, abs=1e-9)
    effect = set_effect(rounds.blocks, SETS)
    assert effect is not None and effect.units == outcome.rounds // 4
    assert effect.ratio == pytest.approx(SLOW_B)
    assert "set 1 over set 0): x0.900" in effect.describe()


def test_a_slower_candidate_on_swapped_sets_still_regresses():
    servers, _ = _placed()
    _, (c,), _ = _play(servers, speeds=(100.0, 93.0))
    assert c.verdict == "regressed" and c.estimate == pytest.approx(0.93)


def test_parallel_plays_both_arms_blocks_at_once():
    """Both blocks of a round must be in flight together: a barrier of 2 that a one-after-the-other runner
    would never pass (it times out and breaks)."""
    barrier = threading.Barrier(2, timeout=5)
    servers, _ = _placed(parallel=True)
    rounds, (c,), _ = _play(servers, on_block=lambda server: barrier.wait())
    assert c.verdict == "equivalent"
    assert len([b for b in rounds.blocks if b.role == "reference"]) == len(
        [b for b in rounds.blocks if b.role == "candidate"]
    )
    serial, _ = _placed(parallel=False)
    with pytest.raises(threading.BrokenBarrierError):
        _play(serial, on_block=lambda server: threading.Barrier(2, timeout=0.2).wait())


@pytest.mark.parametrize(
    ("text", "mode", "error"),
    [
        (None, "disjoint", "--llmbench-arm-servers disjoint needs --llmbench-compare-sets"),
        ("0|1", "both", "--llmbench-compare-sets '0|1': only with --llmbench-arm-servers disjoint"),
        ("0,1|1,2", "disjoint", "the sets share ['1']"),
        ("0,1", "disjoint-parallel", "two non-empty sets separated by '|'"),
        ("cpu:a|b", "disjoint", "CPU cores are whole numbers"),
    ],
)
def test_bad_sets_are_refused_naming_the_option(text, mode, error):
    with pytest.raises(pytest.UsageError, match=error.replace("[", r"\[").replace("|", r"\|")):
        parse_sets(text, mode)


def test_sets_parse_as_gpu_ids_or_cpu_cores():
    assert parse_sets("0,1|2,3", "disjoint") == ((("0", "1"), ("2", "3")), "gpu")
    assert parse_sets("cpu:0|1", "disjoint-parallel") == ((("0",), ("1",)), "cpu")
    assert parse_sets(None, "auto") == (None, "gpu")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_pin_moves_every_thread_of_a_real_process_onto_its_cores():
    core = str(sorted(os.sched_getaffinity(0))[-1])
    code = "import threading, time; [threading.Thread(target=time.sleep, args=(30,), daemon=True).start() for _ in range(3)]; time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        threading.Event().wait(0.5)  # its threads exist
        pin(SimpleNamespace(handle=SimpleNamespace(pids=lambda: [proc.pid])), (core,))
        tasks = os.listdir(f"/proc/{proc.pid}/task")
        assert len(tasks) >= 4
        assert all(os.sched_getaffinity(int(t)) == {int(core)} for t in tasks)
    finally:
        proc.kill()
        proc.wait()
