"""Faults in the pytest session itself: Ctrl-C mid-scenario, an xdist worker killed."""

from __future__ import annotations

import pytest

from .conftest import WHEN_TOKENS, assert_nothing_left_running, records, watcher_saw

pytestmark = pytest.mark.integration


def test_ctrl_c_mid_scenario_keeps_finished_requests_and_stops_the_server(session):
    session.makepyfile(
        test_x=WHEN_TOKENS
        + """
def test_x(llm_server, bench):
    ctrl_c_when_tokens(llm_server, 32 + 2 * 48)
    bench.run(Scenario("long", dataset="random", input_len=16, output_len=48, num_prompts=60, concurrency=2,
                       warmup=1, seed=1))
"""
    )
    result = session.runpytest_subprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED, watcher_saw(session)
    [sc] = records(session.results, "scenario")
    assert 0 < sc["metrics"]["completed"] < 60, "the requests that finished before Ctrl-C are written"
    assert any(n.startswith("interrupted (KeyboardInterrupt) after") for n in sc["notes"])
    assert_nothing_left_running(session.results)


def test_killed_xdist_worker_takes_its_server_with_it(session):
    pytest.importorskip("xdist")
    session.makepyfile(
        test_x="""
        import os, signal

        def test_x(llm_server):
            os.kill(os.getpid(), signal.SIGKILL)
    """
    )
    result = session.runpytest_subprocess("-n", "1", f"--results-dir={session.results}", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*worker 'gw0' crashed*"])
    assert_nothing_left_running(session.results)


def test_sigterm_ends_the_session_and_stops_its_server(session, tmp_path, monkeypatch):
    """A CI job cancelled mid-run: the session stops its servers and dies of the signal; no later test
    runs (a SystemExit raised in the handler used to be recorded as the running test's error, and the
    session went on starting servers)."""
    marker = tmp_path / "later-test-ran"
    monkeypatch.setenv("LATER_MARKER", str(marker))
    session.makepyfile(
        test_x=WHEN_TOKENS
        + """
def test_x(llm_server, bench):
    when_tokens(llm_server, 32 + 48, lambda: os.kill(os.getpid(), signal.SIGTERM))
    bench.run(Scenario("long", dataset="random", input_len=16, output_len=48, num_prompts=60, concurrency=2,
                       warmup=1, seed=1))

def test_y(llm_server):
    open(os.environ["LATER_MARKER"], "w").write("ran")
"""
    )
    result = session.runpytest_subprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider")
    assert result.ret == -15, result.stdout.str()[-2000:] + "\n" + watcher_saw(session)
    assert not marker.exists(), "no test runs after SIGTERM"
    assert_nothing_left_running(session.results)
