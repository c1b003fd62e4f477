"""host_load: other processes' cores over a window, and when that counts as contention."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from pytest_llmbench import host_load
from pytest_llmbench.host_load import HostLoad, Snapshot, between


def _snap(at: float, busy: int, procs: dict, steal: int = 0) -> Snapshot:
    return Snapshot(at=at, busy=busy, steal=steal, procs=procs)


def test_others_are_the_host_minus_our_process_tree(monkeypatch):
    monkeypatch.setattr(host_load, "_TICK", 100)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    # pid 10 is ours (root), 11 its child (the server), 20 a neighbour, 30 a recycled pid (new start time).
    start = _snap(
        0.0,
        0,
        {10: (1, "pytest", 0, 5), 11: (10, "llama-server", 0, 6), 20: (1, "stress", 0, 7), 30: (1, "old", 900, 8)},
    )
    end = _snap(
        1.0,
        200,
        {10: (1, "pytest", 20, 5), 11: (10, "llama-server", 110, 6), 20: (1, "stress", 70, 7), 30: (1, "new", 5, 99)},
    )
    load = between(start, end, [10], include_self=False)
    assert load.own == 1.3 and load.others == 0.7 and load.contended
    assert load.top[0] == ("stress", 0.7) and ("new", 0.05) in load.top  # pid 30 counted from its new start
    assert "other processes used 0.70 of 2 cores" in load.describe() and "stress 70%" in load.describe()


def test_process_trees_named_in_the_environment_are_ours(monkeypatch):
    """The project's suite under xdist names its controller: a sibling worker's server is not a neighbour."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    start = _snap(0.0, 0, {10: (1, "pytest", 0, 5), 20: (1, "xdist", 0, 7), 21: (20, "llama-server", 0, 8)})
    end = _snap(1.0, 200, {10: (1, "pytest", 90, 5), 20: (1, "xdist", 10, 7), 21: (20, "llama-server", 100, 8)})
    monkeypatch.setenv(host_load.OWN_TREES_ENV, "20")
    named = between(start, end, [10], include_self=False)
    assert named is not None and named.others == 0 and not named.contended
    monkeypatch.delenv(host_load.OWN_TREES_ENV)
    unnamed = between(start, end, [10], include_self=False)
    assert unnamed is not None and unnamed.others == 1.1 and unnamed.contended


def test_a_child_that_exits_within_the_window_is_still_ours():
    """Issue 36: a recording session beside the suite's other worker read "other processes used 0.53 of 2 cores":
    its short-lived processes' time, gone with them, had counted as the neighbour's."""
    start = host_load.snapshot()
    burn = "import time\nwhile time.process_time() < 0.5: pass\n"  # half a second of CPU, then exit
    subprocess.run([sys.executable, "-c", burn], check=True)
    load = between(start, host_load.snapshot())
    assert load is not None
    assert load.own * load.seconds >= 0.45, load.describe()  # the exited child's CPU time is this process's


def test_a_child_alive_at_the_start_and_reaped_within_the_window_counts_only_its_window(monkeypatch):
    monkeypatch.setattr(host_load, "_TICK", 100)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    # pid 11 had used 500 ticks before the window, 40 within it, and was reaped by 10 (its 540 now in 10's count)
    start = _snap(0.0, 0, {10: (1, "pytest", 0, 5), 11: (10, "child", 500, 6)})
    end = _snap(1.0, 100, {10: (1, "pytest", 560, 5)})
    load = between(start, end, [10], include_self=False)
    assert load.own == 0.6 and load.others == 0.4


def test_a_neighbour_on_an_idle_core_is_not_contention():
    """16 cores, our server on 2, a busy process on a third: nothing was taken from us."""
    assert not HostLoad(seconds=5, cores=16, busy=3.0, own=2.0, steal=0.0).contended
    assert HostLoad(seconds=5, cores=2, busy=2.0, own=1.2, steal=0.0).contended
    assert not HostLoad(seconds=5, cores=2, busy=2.0, own=1.9, steal=0.0).contended  # 0.1 core: noise
    assert HostLoad(seconds=5, cores=2, busy=2.0, own=1.6, steal=0.4).contended  # VM steal is someone else


def test_unknown_or_too_short_windows_judge_nothing():
    s = _snap(0.0, 0, {})
    assert between(None, s) is None and between(s, None) is None
    assert between(s, _snap(0.1, 10, {})) is None


def test_a_real_busy_process_is_seen_as_another_process(monkeypatch):
    monkeypatch.delenv(host_load.OWN_TREES_ENV, raising=False)  # the busy child is this run's, but unnamed
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        start = host_load.snapshot()
        time.sleep(1.5)
        load = between(start, host_load.snapshot(), [], include_self=False)
    finally:
        busy.kill()
        busy.wait()
    assert load is not None and load.others >= 0.5, load
    assert any(name.startswith("python") for name, _ in load.top), load.top
