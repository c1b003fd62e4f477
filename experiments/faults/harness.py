"""The battery's harness: a generated bench folder, a ``pytest`` subprocess started as a CI runner starts it,
a fault applied from outside when the test file says the server is busy, and what was left behind.

What is left is looked for three ways, none of which trusts the plugin's own records: every descendant of
the pytest process seen while it ran (psutil, polled), every port a server of the run was on (who still
listens there), and the containers carrying the project's labels whose owner label names a pytest of the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.faults: the fault suite's session code, imported rather than copied

from tests.faults.conftest import WHEN_TOKENS, smol_configs

from pytest_llmbench.launchers import docker as dl

#: Test-file code: once the server has generated ``tokens`` tokens, fault_now.json says where the server is
#: (port, process group, container); the battery applies the fault from outside, as a user's CI would.
BUSY = (
    WHEN_TOKENS
    + r"""
import json

def mark_busy(server, tokens):
    h = server.handle
    info = {"port": server.port, "pgid": getattr(h, "pgid", None),
            "container": getattr(getattr(h, "container", None), "name", None)}
    def mark():
        with open("fault_now.tmp", "w") as f:
            json.dump(info, f)
        os.replace("fault_now.tmp", "fault_now.json")
    when_tokens(server, tokens, mark)

LONG = dict(dataset="random", input_len=16, output_len=48, num_prompts=60, concurrency=2, warmup=1, seed=1)
"""
)
TINY_SCENARIO = (
    'Scenario("{name}", dataset="random", input_len=16, output_len=8, num_prompts=2, concurrency=1, warmup=1, seed=1)'
)


def tiny_test(name: str = "tiny", fn: str = "test_tiny") -> str:
    return f"\ndef {fn}(llm_server, bench):\n    bench.run({TINY_SCENARIO.format(name=name)})\n"


def long_test(stall: float = 120.0, fn: str = "test_long") -> str:
    return (
        f"\ndef {fn}(llm_server, bench):\n    mark_busy(llm_server, 32 + 2 * 48)\n"
        f'    bench.run(Scenario("long", stall_timeout_s={stall}, **LONG))\n'
    )


def project(where: Path, configs: str, tests: dict[str, str], conftest: str = "") -> Path:
    """A bench folder as a user's repository has one: configs/, pytest.ini, test files."""
    where.mkdir(parents=True)
    (where / "configs").mkdir()
    (where / "configs" / "servers.yaml").write_text(configs)
    (where / "pytest.ini").write_text("[pytest]\nllmbench_configs = configs\n")
    if conftest:
        (where / "conftest.py").write_text(conftest)
    for name, text in tests.items():
        (where / f"{name}.py").write_text("from pytest_llmbench import Scenario\n" + text)
    return where


def smol(*configs: str, docker_image: str = "") -> str:
    extra = f', launcher: docker, image: "{docker_image}", engine_options: {{binary: llama-server}}'
    return smol_configs(*configs, defaults=extra if docker_image else "")


@dataclass
class Run:
    ret: int | None
    out: str
    elapsed: float
    seen: dict[int, psutil.Process] = field(default_factory=dict)
    ports: set[int] = field(default_factory=set)
    fault_note: str = ""
    owners: set[int] = field(default_factory=set)  # pytest pids: a container's owner label names one


def _watch(proc: subprocess.Popen, seen: dict[int, psutil.Process], ports: set[int], stop: threading.Event) -> None:
    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        try:
            for child in root.children(recursive=True):
                seen.setdefault(child.pid, child)
                try:
                    cmd = child.cmdline()
                except psutil.Error:
                    continue
                if "--port" in cmd and cmd.index("--port") + 1 < len(cmd):
                    ports.add(int(cmd[cmd.index("--port") + 1]))
        except psutil.Error:
            pass
        time.sleep(0.1)


def pytest_run(
    cwd: Path,
    *args: str,
    fault: Callable[[subprocess.Popen, dict], str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    command: list[str] | None = None,
) -> Run:
    """``python -m pytest ARGS`` in ``cwd`` as a CI runner starts it (stdout a pipe, Ctrl-C at Python's default
    even when the battery runs as a background job); ``fault`` runs once fault_now.json appears."""
    cmd = command or [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen: dict[int, psutil.Process] = {}
    ports: set[int] = set()
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(proc, seen, ports, stop), daemon=True)
    watcher.start()
    note: list[str] = []

    def apply() -> None:
        marker = cwd / "fault_now.json"
        while proc.poll() is None:
            if marker.exists():
                info = json.loads(marker.read_text())
                ports.add(info["port"])
                note.append(fault(proc, info) if fault else "")
                return
            time.sleep(0.05)
        note.append("NOT APPLIED: the session ended before the server was busy")

    applier = threading.Thread(target=apply, daemon=True)
    if fault:
        applier.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        note.append(f"TIMED OUT after {timeout} s")
    stop.set()
    watcher.join()
    if fault:
        applier.join(5)
    return Run(
        proc.returncode, out.decode(errors="replace"), time.monotonic() - t0, seen, ports, "; ".join(note), {proc.pid}
    )


def processes_left(run: Run, wait_s: float = 10.0) -> list[str]:
    """The run's descendants still alive, and whoever still listens on its servers' ports."""
    deadline = time.monotonic() + wait_s
    while True:
        alive = {}
        for pid, p in run.seen.items():
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive[pid] = f"{p.name()} (pid {pid})"
            except psutil.Error:
                pass
        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr.port in run.ports and c.pid:
                alive.setdefault(c.pid, f"pid {c.pid} listening on :{c.laddr.port}")
        if not alive or time.monotonic() > deadline:
            return sorted(alive.values())
        time.sleep(0.2)


_DOCKER: list = []


def docker():
    """The docker SDK client (None where no engine answers)."""
    if not _DOCKER:
        try:
            _DOCKER.append(dl.docker_client())
        except dl.DockerUnavailable:
            _DOCKER.append(None)
    return _DOCKER[0]


def containers_of(owners: set[int]) -> list[str]:
    """`docker ps -a` filtered on the project's label, those a pytest of this run owned (other engineers' test
    sessions share the engine)."""
    client = docker()
    if client is None:
        return []
    found = client.containers.list(all=True, filters={"label": dl.LABEL_SESSION})
    return sorted(c.name for c in found if (c.labels or {}).get(dl.LABEL_OWNER_PID, "") in {str(o) for o in owners})


def results_records(results: Path) -> list[dict]:
    """Every whole line of the folder's results files (a torn line is what some faults leave: skipped)."""
    out = []
    for f in sorted(results.rglob("results*.jsonl")):
        for line in f.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def kept(results: Path) -> str:
    """What the folder keeps: scenario records and the requests finished in them, comparison blocks."""
    recs = results_records(results)
    scenarios = [r for r in recs if r.get("record") == "scenario"]
    done = sum(int((r.get("metrics") or {}).get("completed") or 0) for r in scenarios)
    blocks = sum(r.get("record") == "comparison_block" for r in recs)
    comps = sum(r.get("record") == "comparison" for r in recs)
    text = f"{len(scenarios)} scenarios, {done} requests"
    return text + (f", {blocks} comparison blocks, {comps} comparison rows" if blocks else "")


def line_with(text: str, *needles: str) -> str:
    """The first output line holding every needle, for the table (one line, pipes escaped)."""
    for line in text.splitlines():
        if all(n in line for n in needles):
            line = line.strip()
            return (line[:220] + " …" if len(line) > 220 else line).replace("|", "\\|")
    return ""


def wait_port_closed(port: int, timeout: float = 60) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.005)
