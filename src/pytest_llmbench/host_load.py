"""What else ran on the host while a scenario was measured: other processes' CPU time and VM steal.

A session-start calibration cannot see a neighbour that starts mid-scenario, and a timing value measured
while another process took the cores the server needed is the neighbour's number, not the engine's. So
every scenario reads the kernel's CPU accounting before and after (``/proc/stat`` for the whole host,
``/proc/<pid>/stat`` per process): what the host spent minus what this test's own processes spent (pytest,
its children, the server's processes) is the others' share, VM steal included. The scenario's cores were
contended when others used at least ``OTHERS_MIN`` cores *and* the host had no idle core to give them
(``own + others > cores − SLACK``): a busy process on an idle core of a 16-core GPU host is no contention,
the same process on a 2-core runner is. Where ``/proc`` does not exist the load is unknown and judges
nothing.

**A CPU limit is the machine.** A runner with a cgroup CPU quota (a Kubernetes pod limited to 2 CPUs on a
64-core node, ``docker run --cpus``) competes with the processes of its own cgroup for the quota, not with
the host for its cores: a neighbour in the pod takes the server's time while the host has cores idle. So
where this process's cgroup (or one above it) holds a quota below the host's cores, the processes in that
cgroup are counted against it as well (``limit``, ``others_in_limit``), by the same rule: contended when they
used at least ``OTHERS_MIN`` cores and left less than ``SLACK`` of the quota. cgroup v2 (``cpu.max``) and v1
(``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``) are read; the tightest quota on the way to the root binds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

OTHERS_MIN = 0.25  # cores of other processes (or steal) that count as a neighbour
SLACK = 0.25  # cores left idle below which the host counts as oversubscribed
# Pids (comma-separated) whose process trees count as this run's own: a harness that runs pytest sessions
# side by side (the project's own suite under pytest-xdist) names its root so they are not each other's
# neighbour. Unset for a user's run: then a parallel worker's server is contention, as it is.
OWN_TREES_ENV = "LLMBENCH_OWN_PROCESS_TREES"
_PROC = Path("/proc")
_CGROUP = Path("/sys/fs/cgroup")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Snapshot:
    at: float
    busy: int  # host ticks not idle (user, nice, system, irq, softirq, steal)
    steal: int
    procs: dict[int, tuple[int, str, int, int]]  # pid → (ppid, command, its and reaped children's ticks, start)
    limit: CpuLimit | None = None  # this process's cgroup CPU quota, where one binds
    in_limit: frozenset[int] = frozenset()  # the pids under that quota's cgroup


@dataclass(frozen=True)
class CpuLimit:
    """A cgroup CPU quota: ``cores`` of CPU time per second for the processes under ``group``."""

    cores: float
    group: str  # the cgroup path (as /proc/<pid>/cgroup names it) the quota is set on
    controller: str  # "" for cgroup v2, else the v1 hierarchy's controllers ("cpu" or "cpu,cpuacct")


@dataclass(frozen=True)
class HostLoad:
    """Average cores used over a window: by the host, by our own processes, by everything else."""

    seconds: float
    cores: int
    busy: float
    own: float
    steal: float
    top: tuple[tuple[str, float], ...] = ()  # the busiest other processes, (command, cores)
    limit: float | None = None  # the cgroup CPU quota in cores, where one binds below the host's cores
    others_in_limit: float = 0.0  # cores other processes under that quota used

    @property
    def others(self) -> float:
        return max(0.0, self.busy - self.own)

    @property
    def host_contended(self) -> bool:
        return self.others >= OTHERS_MIN and self.own + self.others > self.cores - SLACK

    @property
    def limit_contended(self) -> bool:
        return (
            self.limit is not None
            and self.others_in_limit >= OTHERS_MIN
            and self.own + self.others_in_limit > self.limit - SLACK
        )

    @property
    def contended(self) -> bool:
        return self.host_contended or self.limit_contended

    def describe(self) -> str:
        who = ", ".join(f"{name} {100 * c:.0f}%" for name, c in self.top[:3])
        steal = f", VM steal {self.steal:.2f}" if self.steal >= 0.05 else ""
        if self.limit_contended and not self.host_contended:
            where = f"{self.others_in_limit:.2f} of this cgroup's CPU limit of {self.limit:g} cores"
        else:
            where = f"{self.others:.2f} of {self.cores} cores"
        return f"other processes used {where} while this test's used {self.own:.2f}{steal}" + (
            f" ({who})" if who else ""
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "seconds": round(self.seconds, 2),
            "cores": self.cores,
            "busy": round(self.busy, 3),
            "own": round(self.own, 3),
            "others": round(self.others, 3),
            "steal": round(self.steal, 3),
            "contended": self.contended,
            "limit": self.limit,
            "others_in_limit": round(self.others_in_limit, 3),
            "top": [[n, round(c, 3)] for n, c in self.top],
        }


def snapshot() -> Snapshot | None:
    """The host's and every process's CPU ticks now; None where the kernel does not expose them."""
    try:
        fields = (_PROC / "stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = [int(x) for x in fields[:8]]
    busy = sum(ticks) - ticks[3] - ticks[4]  # all but idle and iowait
    procs: dict[int, tuple[int, str, int, int]] = {}
    for d in _PROC.iterdir():
        if not d.name.isdigit():
            continue
        try:
            text = (d / "stat").read_text()
        except OSError:  # exited while we looked
            continue
        close = text.rfind(")")
        rest = text[close + 2 :].split()
        procs[int(d.name)] = (
            int(rest[1]),
            text[text.find("(") + 1 : close],
            sum(int(x) for x in rest[11:15]),  # its own ticks and its reaped children's (utime … cstime)
            int(rest[19]),
        )
    limit = cpu_limit()
    in_limit = frozenset(pid for pid in procs if limit is not None and _under(pid, limit))
    return Snapshot(time.monotonic(), busy, ticks[7], procs, limit, in_limit)


def _cgroup_lines(pid: int | str) -> list[tuple[str, str]]:
    """(controllers, path) per hierarchy of /proc/<pid>/cgroup ("" controllers: cgroup v2)."""
    try:
        text = (_PROC / str(pid) / "cgroup").read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            out.append((parts[1], parts[2]))
    return out


def _quota(folder: Path, controller: str) -> float | None:
    """The quota set on one cgroup folder, in cores; None where there is none (or it cannot be read)."""
    try:
        if not controller:
            quota, period = (folder / "cpu.max").read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        quota_us = int((folder / "cpu.cfs_quota_us").read_text())
        period_us = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us


def cpu_limit(pid: int | str = "self") -> CpuLimit | None:
    """The tightest cgroup CPU quota over ``pid`` (its cgroup and those above it), where it is below the
    host's cores; None without one. Inside a container whose cgroup root is its own, the path in
    /proc/<pid>/cgroup may not exist under the mount: the mount's root is then the container's cgroup."""
    host = os.cpu_count() or 1
    best: CpuLimit | None = None
    for controllers, path in _cgroup_lines(pid):
        names = controllers.split(",") if controllers else []
        if controllers and "cpu" not in names:
            continue
        mount = _CGROUP if not controllers else _CGROUP / controllers
        if controllers and not mount.is_dir():
            mount = _CGROUP / "cpu"
        parts = [p for p in path.split("/") if p]
        if parts and not (mount / "/".join(parts)).is_dir():
            parts = []  # a namespaced view: the mount's root is this process's own cgroup
        for depth in range(len(parts), -1, -1):
            cores = _quota(mount.joinpath(*parts[:depth]), controllers)
            if cores is not None and cores < host and (best is None or cores < best.cores):
                best = CpuLimit(cores, "/" + "/".join(parts[:depth]), controllers)
    return best


def _under(pid: int, limit: CpuLimit) -> bool:
    """Whether ``pid`` is in ``limit``'s cgroup or one below it."""
    group = limit.group.rstrip("/")
    for controllers, path in _cgroup_lines(pid):
        if controllers == limit.controller:
            return path == group or path.startswith(group + "/") or group == ""
    return False


def _tree(procs: dict[int, tuple[int, str, int, int]], roots: Iterable[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in procs.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    todo = [r for r in roots if r > 0]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(children.get(pid, ()))
    return seen


def between(
    start: Snapshot | None, end: Snapshot | None, own_roots: Iterable[int] = (), *, include_self: bool = True
) -> HostLoad | None:
    """The load from ``start`` to ``end``; ours are ``own_roots`` and this process (unless not
    ``include_self``) with their descendants. None when either side is unknown or the window is too
    short to mean anything."""
    if start is None or end is None or end.at - start.at < 0.2:
        return None
    named = (int(p) for p in os.environ.get(OWN_TREES_ENV, "").split(",") if p.strip().isdigit())
    roots = {*own_roots, *named, *([os.getpid()] if include_self else [])}
    own = _tree(end.procs, roots) | _tree(start.procs, roots)
    wall = (end.at - start.at) * _TICK
    used: dict[int, float] = {}
    for pid, (_, _, ticks, started) in end.procs.items():
        before = start.procs.get(pid)  # the same process only if it started at the same time (pids recycle)
        used[pid] = ticks - (before[2] if before and before[3] == started else 0)
    # A child that exits within the window is gone from ``end`` and its ticks are in its parent's: all of
    # them, those before the window too, which were in its own count at the start. Without the parent's share a
    # run's short-lived processes (a pytest session, a tokenizer, a quantize step) were the neighbour's.
    gone = sum(
        ticks
        for pid, (_, _, ticks, started) in start.procs.items()
        if pid in own and (pid not in end.procs or end.procs[pid][3] != started)
    )
    own_ticks = max(0, sum(t for pid, t in used.items() if pid in own) - gone)
    others = sorted(
        ((end.procs[pid][1], t / wall) for pid, t in used.items() if pid not in own and t > 0), key=lambda x: -x[1]
    )
    limit = end.limit if end.limit is not None and start.limit == end.limit else None
    in_limit = (start.in_limit | end.in_limit) - own if limit is not None else frozenset()
    return HostLoad(
        seconds=end.at - start.at,
        cores=os.cpu_count() or 1,
        busy=(end.busy - start.busy) / wall,
        own=own_ticks / wall,
        steal=(end.steal - start.steal) / wall,
        top=tuple((n, c) for n, c in others[:3] if c >= 0.05),
        limit=limit.cores if limit is not None else None,
        others_in_limit=sum(max(0, used.get(pid, 0)) for pid in in_limit) / wall,
    )
