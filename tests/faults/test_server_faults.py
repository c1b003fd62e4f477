"""Faults in a real llama-server: killed, paused, slow to start, exiting at start, its port taken."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from pytest_llmbench import server as server_mod
from pytest_llmbench.server import ServerStartError, start_server

from .conftest import WHEN_TOKENS, assert_nothing_left_running, records, smol_configs

pytestmark = pytest.mark.integration

# Runs inside the pytester session: a fault injected into the server mid-scenario, then a second test.
FAULTED_SESSION = (
    WHEN_TOKENS
    + """
def test_a_faulted(llm_server, bench):
    when_tokens(llm_server, 32 + 2 * 48, lambda: os.killpg(llm_server.handle.pgid, signal.{signal}))
    bench.run(Scenario("long", dataset="random", input_len=16, output_len=48, num_prompts=60, concurrency=2,
                       warmup=1, seed=1, stall_timeout_s={stall}))

def test_b_next(llm_server, bench):
    bench.run(Scenario("next", output_len=8, num_prompts=1, warmup=0))
"""
)


def _run_faulted(session, signal: str, stall: float = 120.0):
    """A process of its own: the injecting thread would outlive an in-process session that never fired it."""
    session.makepyfile(test_faulted=FAULTED_SESSION.format(signal=signal, stall=stall))
    t0 = time.monotonic()
    result = session.runpytest_subprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider")
    return result, time.monotonic() - t0


def test_server_killed_mid_scenario_is_named_and_finished_requests_are_kept(session):
    result, _ = _run_faulted(session, "SIGKILL")
    out = result.stdout.str()
    result.assert_outcomes(failed=1, errors=1)
    assert "server smol exited (code -9, SIGKILL" in out
    result.stdout.fnmatch_lines(["*during scenario long: * of 60 requests finished and were written to results.jsonl*"])
    result.stdout.fnmatch_lines(["*server smol exited (code -9, SIGKILL*before this test started*"])
    assert "ConnectError" not in out and "Traceback" not in out
    [sc] = records(session.results, "scenario")
    assert sc["scenario"] == "long" and 0 < sc["metrics"]["completed"] < 60
    assert any("server exited during the scenario (code -9" in n for n in sc["notes"])
    assert sc["metrics"]["duration"] < 60, "the scenario ends when the server dies, not after 60 requests"
    assert_nothing_left_running(session.results)


def test_paused_server_ends_the_scenario_within_its_stall_budget(session):
    """SIGSTOP: the process is alive but silent. One stall budget (3 s here) ends the whole scenario;
    the next test fails at once instead of waiting again; the paused server is still stopped."""
    result, elapsed = _run_faulted(session, "SIGSTOP", stall=3.0)
    out = result.stdout.str()
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*server smol not responding: no data on any connection for * s (stall_timeout_s=3) during scenario long*"]
    )
    result.stdout.fnmatch_lines(["*server smol not responding: * before this test started*"])
    [sc] = records(session.results, "scenario")
    assert 0 < sc["metrics"]["completed"] < 60 and "server stopped responding during the scenario" in sc["notes"]
    errors = [r["error"] for r in sc["requests"] if not r["ok"]]
    assert errors and all("not responding" in e for e in errors)
    assert sc["metrics"]["duration"] < 60, "one stall budget (3 s), not one per request (60 × 3 s)"
    assert elapsed < 60, "nothing waits out a second budget"
    assert "Traceback" not in out
    assert_nothing_left_running(session.results)


def test_slow_start_past_startup_timeout_names_the_timeout_and_stops_the_server(pytester, tmp_path):
    """A real llama-server behind a wrapper that takes 30 s to exec it; startup_timeout is 2 s."""
    from pytest_llmbench.engines.llamacpp import llamacpp_binary

    slow = tmp_path / "slow-llama-server"
    slow.write_text(f'#!/bin/sh\nsleep 30\nexec {llamacpp_binary()} "$@"\n')
    slow.chmod(0o755)
    pytester.makefile(
        ".yaml",
        **{"configs/servers": smol_configs(f"{{name: slow, startup_timeout: 2, engine_options: {{binary: {slow}}}}}")},
    )
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    results = tmp_path / "results"
    t0 = time.monotonic()
    result = pytester.runpytest_inprocess(f"--results-dir={results}", "-p", "no:cacheprovider")
    assert time.monotonic() - t0 < 25
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*config slow: not ready after 2 s (startup_timeout) polling /health*"])
    assert "Traceback" not in result.stdout.str()
    assert not _processes_of(slow).strip(), "the wrapper and its server were stopped"


def _processes_of(path) -> str:
    import subprocess

    return subprocess.run(["pgrep", "-af", str(path)], capture_output=True, text=True).stdout


def test_server_exiting_at_start_shows_its_own_message_not_plugin_source(session):
    session.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol, args: [--no-such-flag]}")})
    session.makepyfile(test_x="def test_x(llm_server):\n    pass\n\ndef test_y(llm_server):\n    pass\n")
    result = session.runpytest_inprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*config smol: server exited (code 1) before becoming ready*", "*--- last 40 lines of*server.log ---*"]
    )
    assert "--no-such-flag" in out, "llama-server's own complaint, from the log tail"
    assert "def llm_server" not in out and "start_server(" not in out, "no plugin source in the report"
    log = (session.results / "smol" / "server.log").read_text()
    assert log.count("[llmbench] starting config smol") == 1, "one start attempt, reported for each of its tests"


@contextlib.contextmanager
def _taken_port() -> Iterator[int]:
    """A port another process holds: bound and listening, so llama-server cannot bind it. It hangs up on
    every connection, as a server of another protocol would: a socket that accepts and never answers would
    hold each readiness poll for its whole 5 s timeout before the start sees its server gone."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()

    def hang_up() -> None:
        with contextlib.suppress(OSError):  # shut down at the end
            while True:
                taken.accept()[0].close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    try:
        yield taken.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            taken.shutdown(socket.SHUT_RDWR)  # wakes the accept() (a close alone would leave it listening)
        taken.close()
        thread.join(5)


def test_port_taken_before_the_server_binds_it_is_retried_on_another(cpu_configs, tmp_path, monkeypatch):
    cfg = replace(cpu_configs["smol-nospec"], args=("-c", "512", "-np", "1", "-t", "1", "--no-webui"))
    real = server_mod.free_port
    with _taken_port() as taken:
        ports = iter([taken])
        monkeypatch.setattr(server_mod, "free_port", lambda host="127.0.0.1": next(ports, None) or real(host))
        server = start_server(cfg, tmp_path / "s")
        try:
            assert server.alive() and server.port != taken
        finally:
            server.stop()
    log = (tmp_path / "s" / "server.log").read_text()
    assert "was taken before the server bound it: retrying on another port" in log


def test_port_taken_every_time_is_one_clear_error(cpu_configs, tmp_path, monkeypatch):
    cfg = replace(cpu_configs["smol-nospec"], args=("-c", "512", "-np", "1", "-t", "1", "--no-webui"))
    with _taken_port() as taken:
        monkeypatch.setattr(server_mod, "free_port", lambda host="127.0.0.1": taken)
        with pytest.raises(ServerStartError, match=r"was taken before the server could bind it, 3 times in a row"):
            start_server(cfg, tmp_path / "s")


# --- issue 52 ---------------------------------------------------------------------------------------------

PAUSED_BETWEEN_SCENARIOS = """
import os, signal
from pytest_llmbench import Scenario

def test_a_then_paused(llm_server, bench):
    bench.run(Scenario("first", output_len=4, num_prompts=1, warmup=0))
    os.killpg(llm_server.handle.pgid, signal.SIGSTOP)  # stopped between scenarios: the next control call hangs

def test_b_tokenizes(llm_server, bench):
    bench.run(Scenario("random", dataset="random", input_len=16, output_len=4, num_prompts=2, warmup=0,
                       stall_timeout_s=3))

def test_c_next(llm_server, bench):
    bench.run(Scenario("next", output_len=4, num_prompts=1, warmup=0, stall_timeout_s=3))
"""


def test_server_paused_between_scenarios_is_named_with_the_hung_call_within_one_stall_budget(session):
    """Issue 52 (4): a server stopped between scenarios hung /tokenize for its 60 s timeout, then a raw
    httpx ReadTimeout traceback that named no server; the server was not marked hung, so the next test
    waited again (/slots, /metrics, then its stall budget). Now one stall budget (3 s) names the server and
    the call, and the next test fails at once."""
    session.makepyfile(test_paused=PAUSED_BETWEEN_SCENARIOS)
    t0 = time.monotonic()
    result = session.runpytest_subprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider")
    elapsed = time.monotonic() - t0
    out = result.stdout.str()
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*server smol not responding: POST /tokenize got no answer in 3 s (stall_timeout_s=3) during scenario random"]
    )
    result.stdout.fnmatch_lines(
        ["*server smol not responding: POST /tokenize got no answer in 3 s*before this test started"]
    )
    assert "During handling of the above exception" not in out
    assert "ReadTimeout" not in out and "Traceback" not in out
    assert elapsed < 45, f"one stall budget, not a 60 s control timeout and then more ({elapsed:.0f} s)"
    assert [r["scenario"] for r in records(session.results, "scenario")] == ["first"]
    assert_nothing_left_running(session.results)


def test_start_failure_is_reported_once_per_test(session):
    """Issue 52 (11): pytest.fail inside the ``except`` printed the start failure twice, joined by "During
    handling of the above exception, another exception occurred"."""
    session.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol, args: [--no-such-flag]}")})
    session.makepyfile(test_x="def test_x(llm_server):\n    pass\n")
    result = session.runpytest_inprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider", "--tb=long")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    # The short summary repeats each error's message by design (in full where CI is set, cut to the
    # terminal's width elsewhere): the report under test is the one above it.
    report = out.split("short test summary info")[0]
    assert report.count("config smol: server exited (code 1) before becoming ready") == 1, report[-4000:]
    assert "During handling of the above exception" not in out
