"""Shared fixtures: the repository's CPU configs and a real llama-server with SmolLM2."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from pytest_llmbench.config import load_config_file
from pytest_llmbench.server import start_server

ROOT = Path(__file__).resolve().parents[1]
CPU_CONFIGS = ROOT / "benches" / "configs" / "cpu.yaml"


@pytest.fixture(scope="session")
def cpu_configs():
    return {c.name: c for c in load_config_file(CPU_CONFIGS)}


@pytest.fixture(scope="module")
def smol_server(cpu_configs, tmp_path_factory):
    """A real llama-server (no drafting) for the module's tests; stopped afterwards."""
    server = start_server(cpu_configs["smol-nospec"], tmp_path_factory.mktemp("smol-nospec"))
    yield server
    server.stop()


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
