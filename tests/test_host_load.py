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


def _cgroups(tmp_path, monkeypatch, files: dict[str, str], self_cgroup: str, others: dict[int, str]):
    """A fake /proc and /sys/fs/cgroup: ``files`` under the cgroup mount, each pid's /proc/<pid>/cgroup."""
    proc, cg = tmp_path / "proc", tmp_path / "cgroup"
    for rel, text in files.items():
        (cg / rel).parent.mkdir(parents=True, exist_ok=True)
        (cg / rel).write_text(text)
    for pid, text in {"self": self_cgroup, **others}.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cgroup").write_text(text)
    monkeypatch.setattr(host_load, "_PROC", proc)
    monkeypatch.setattr(host_load, "_CGROUP", cg)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)


def test_a_cgroup_v2_quota_is_read_and_the_tightest_above_binds(tmp_path, monkeypatch):
    """A pod limited to 2 CPUs on a 64-core node: the pod's cpu.max binds, the container's looser one not."""
    files = {
        "cpu.max": "max 100000\n",
        "kubepods/pod1/cpu.max": "200000 100000\n",
        "kubepods/pod1/ctr/cpu.max": "400000 100000\n",
    }
    _cgroups(tmp_path, monkeypatch, files, "0::/kubepods/pod1/ctr\n", {})
    limit = host_load.cpu_limit()
    assert limit == host_load.CpuLimit(2.0, "/kubepods/pod1", "")
    _cgroups(tmp_path / "free", monkeypatch, {"cpu.max": "max 100000\n"}, "0::/\n", {})
    assert host_load.cpu_limit() is None  # no quota: the host's cores are the machine


def test_a_cgroup_v1_quota_and_a_namespaced_view_are_read(tmp_path, monkeypatch):
    files = {"cpu/throttle/cpu.cfs_quota_us": "120000\n", "cpu/throttle/cpu.cfs_period_us": "100000\n"}
    _cgroups(tmp_path, monkeypatch, files, "4:memory:/x\n1:cpu:/throttle\n", {})
    assert host_load.cpu_limit() == host_load.CpuLimit(1.2, "/throttle", "cpu")
    # a container's own cgroup root mounted where the host path does not exist: the mount's root is its cgroup
    files = {"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}
    _cgroups(tmp_path / "ns", monkeypatch, files, "1:cpu:/docker/abc\n", {})
    assert host_load.cpu_limit() == host_load.CpuLimit(0.5, "/", "cpu")
    # a quota at or above the host's cores limits nothing
    files = {"cpu/big/cpu.cfs_quota_us": "9000000\n", "cpu/big/cpu.cfs_period_us": "100000\n"}
    _cgroups(tmp_path / "big", monkeypatch, files, "1:cpu:/big\n", {})
    assert host_load.cpu_limit() is None


def test_a_neighbour_inside_the_cpu_limit_is_contention_though_the_host_has_idle_cores(tmp_path, monkeypatch):
    """Issue 54's throttled run: the suite in a cgroup held to 1.2 cores, a spinning neighbour beside the server in
    the same cgroup, the 2-core host 0.8 of a core idle. The host rule saw no contention; the limit is the machine."""
    files = {"cpu/throttle/cpu.cfs_quota_us": "120000\n", "cpu/throttle/cpu.cfs_period_us": "100000\n"}
    cgroup = {10: "1:cpu:/throttle\n", 11: "1:cpu:/throttle\n", 20: "1:cpu:/throttle/sub\n", 30: "1:cpu:/\n"}
    _cgroups(tmp_path, monkeypatch, files, "1:cpu:/throttle\n", cgroup)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(host_load, "_TICK", 100)
    limit = host_load.cpu_limit()
    assert limit is not None and limit.cores == 1.2
    in_limit = frozenset(pid for pid in cgroup if host_load._under(pid, limit))
    assert in_limit == {10, 11, 20}  # pid 30 is outside the limit's cgroup
    procs0 = {10: (1, "pytest", 0, 5), 11: (10, "llama-server", 0, 6), 20: (1, "spin", 0, 7), 30: (1, "cron", 0, 8)}
    procs1 = {10: (1, "pytest", 10, 5), 11: (10, "llama-server", 60, 6), 20: (1, "spin", 50, 7), 30: (1, "cron", 5, 8)}
    start = Snapshot(0.0, 0, 0, procs0, limit, in_limit)
    end = Snapshot(1.0, 125, 0, procs1, limit, in_limit)
    load = between(start, end, [10], include_self=False)
    assert load is not None and load.own == 0.7 and load.others == 0.55
    assert not load.host_contended  # 0.75 of the host's 2 cores idle
    assert load.limit == 1.2 and load.others_in_limit == 0.5 and load.contended
    assert "other processes used 0.50 of this cgroup's CPU limit of 1.2 cores while this test's used 0.70" in (
        load.describe()
    )
    assert load.as_dict()["limit"] == 1.2 and load.as_dict()["contended"] is True
    quiet = Snapshot(1.0, 75, 0, {**procs1, 20: (1, "spin", 0, 7)}, limit, in_limit)
    calm = between(start, quiet, [10], include_self=False)
    assert calm is not None and calm.others_in_limit == 0 and not calm.contended  # the limit alone is no neighbour


def test_the_real_cpu_limit_of_this_process_is_read_without_error():
    """Whatever this machine has (none, v1 or v2), reading it does not fail and a limit found is a positive fraction
    of the host's cores."""
    limit = host_load.cpu_limit()
    assert limit is None or 0 < limit.cores < (os.cpu_count() or 1)
