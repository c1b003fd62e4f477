"""Shared fixtures: the repository's CPU configs and a real llama-server with SmolLM2."""

from __future__ import annotations

import hashlib
import os
import signal
import tempfile
from pathlib import Path

# httpx imports httpcore lazily and maps its errors through a table built on the first request. The
# in-process pytester sessions (tests/compare, tests/gate, ...) drop the modules they imported when they
# end, so an httpcore first imported inside one is imported again afterwards with new exception classes
# that the table no longer matches: a refused connection then escapes as httpcore.ConnectError instead of
# httpx.ConnectError, and every readiness poll that expects httpx.HTTPError fails. Importing it here, before
# any session, keeps one httpcore for the whole run.
import httpcore  # noqa: F401
import pytest

from pytest_llmbench.config import load_config_file
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.host_load import OWN_TREES_ENV
from pytest_llmbench.server import start_server

ROOT = Path(__file__).resolve().parents[1]
CPU_CONFIGS = ROOT / "benches" / "configs" / "cpu.yaml"
XDIST_WORKER_ENV = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def short_context(tokens: int = 4096) -> Path:
    """cpu.yaml with a ``tokens``-token context instead of 16384 (1024 a slot at its -np 4), for the sessions that
    send 16-32-token prompts: a start that allocates a quarter of the KV cache is ready in ~0.41 s instead of
    ~0.58 s on 2 cores (experiments/suite/start_cost.out.md), and those sessions start ~60 servers. Written once per
    content to the temp folder, so a module can name it at import."""
    text = CPU_CONFIGS.read_text()
    assert '-c, "16384"' in text, f"{CPU_CONFIGS}: its shared flags changed; update short_context"
    text = text.replace('-c, "16384"', f'-c, "{tokens}"')
    folder = Path(tempfile.gettempdir(), "pytest-llmbench-tests")
    folder.mkdir(exist_ok=True)
    path = folder / f"cpu-c{tokens}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.yaml"
    if not path.exists():
        part = path.with_name(f"{path.name}.{os.getpid()}")
        part.write_text(text)
        part.replace(path)  # atomic: an xdist worker never reads half a file
    return path


def pytest_configure(config: pytest.Config) -> None:
    """A record of a declared kind missing a required field warns in a user's session (the line is still
    written: records/kinds.py); here it is an error, so a bug in our own writer fails the test that wrote it."""
    config.addinivalue_line("filterwarnings", "error::pytest_llmbench.records.kinds.RecordSchemaWarning")


@pytest.fixture(scope="session", autouse=True)
def inner_sessions_are_not_xdist_workers():
    """Under ``pytest -n 2`` this process is an xdist worker, and xdist says so through the environment.
    The pytest sessions the tests start (pytester, in-process or subprocess) inherit it, and the plugin
    would take each for a worker (its results file named ``results.gw0.jsonl``, clashing with its own
    workers' files): a session a test starts is a user's session of its own, so the variables go. And the
    other worker's sessions and servers are this suite's own processes, not a neighbour that makes a
    scenario's timing "not comparable" (host_load): the whole run, from its root process, counts as own."""
    root = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()  # the xdist controller
    with pytest.MonkeyPatch.context() as mp:
        for name in XDIST_WORKER_ENV:
            mp.delenv(name, raising=False)
        mp.setenv(OWN_TREES_ENV, str(root))
        yield


@pytest.fixture(scope="session")
def cpu_configs():
    return {c.name: c for c in load_config_file(CPU_CONFIGS)}


@pytest.fixture(scope="module")
def smol_server(cpu_configs, tmp_path_factory):
    """A real llama-server (no drafting) for the module's tests; stopped afterwards."""
    server = start_server(cpu_configs["smol-nospec"], tmp_path_factory.mktemp("smol-nospec"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def q2k_draft(cpu_configs, tmp_path_factory) -> Path:
    """cpu.yaml's draft model (SmolLM2 requantized to Q2_K), made the way a server start makes it: once, then
    from the cache."""
    cfg = cpu_configs["smol-draft"]
    with open(tmp_path_factory.mktemp("draft") / "prepare.log", "w") as log:
        LlamaCppEngine().prepare(cfg, log)
    return cfg.models["draft"].path


def process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_quietly(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
