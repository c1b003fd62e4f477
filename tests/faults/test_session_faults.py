"""Faults in the pytest session itself: Ctrl-C (once, twice), SIGTERM mid-scenario, an xdist worker killed,
progress written to a log."""

from __future__ import annotations

import pytest

from .conftest import WHEN_TOKENS, assert_nothing_left_running, records, run_as_terminal, watcher_saw

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


def test_sigterm_is_handled_like_ctrl_c_keeps_finished_requests_writes_the_summary_and_exits_143(
    session, tmp_path, monkeypatch
):
    """A CI job cancelled mid-run (SIGTERM): the finished requests of the scenario in flight are kept, the
    server is stopped, no later test runs, summary.md is written and says so, and the process exits 143
    (128 + SIGTERM). It used to die silently of the signal: no summary, nothing of the scenario kept."""
    marker = tmp_path / "later-test-ran"
    monkeypatch.setenv("LATER_MARKER", str(marker))
    session.makepyfile(
        test_x=WHEN_TOKENS
        + """
def test_x(llm_server, bench):
    when_tokens(llm_server, 32 + 2 * 48, lambda: os.kill(os.getpid(), signal.SIGTERM))
    bench.run(Scenario("long", dataset="random", input_len=16, output_len=48, num_prompts=60, concurrency=2,
                       warmup=1, seed=1))

def test_y(llm_server):
    open(os.environ["LATER_MARKER"], "w").write("ran")
"""
    )
    result = run_as_terminal(session, f"--results-dir={session.results}", "-p", "no:cacheprovider", "--llmbench-report")
    out = result.stdout.str()
    assert result.ret == 143, out[-2000:] + "\n" + watcher_saw(session)
    assert not marker.exists(), "no test runs after SIGTERM"
    [sc] = records(session.results, "scenario")
    done = sc["metrics"]["completed"]
    assert 0 < done < 60, "the requests that finished before SIGTERM are written"
    assert any(n.startswith(f"interrupted (Terminated) after {done} of 60") for n in sc["notes"]), sc["notes"]
    [rec] = records(session.results, "session")
    assert rec["exit_status"] == 143 and rec["signals"] == ["SIGTERM"]
    assert "llmbench: terminated by SIGTERM" in out
    assert f"{done}/60" in out, "the interrupted scenario reads done of planned"
    headline = "llmbench: FAILED — pytest terminated (SIGTERM) (exit status 143)"
    assert out.splitlines().count(headline) == 1, out[-1500:]
    summary = (session.results / "summary.md").read_text()
    assert headline in summary and f"{done}/60" in summary
    assert (session.results / "report.html").is_file()
    assert "Traceback" not in out + result.stderr.str()
    assert_nothing_left_running(session.results)


def test_a_second_ctrl_c_while_the_session_ends_cannot_misreport_it(session):
    """Ctrl-C twice: the second press lands while the session stops its server (its port closed) and writes
    its records. It used to escape as a KeyboardInterrupt traceback (exit 130) while summary.md and the session
    record said "exit status 0, no tests recorded"; now the end runs through and every surface says 2."""
    session.makepyfile(
        test_x=WHEN_TOKENS
        + """
import httpx

def twice(server):
    os.kill(os.getpid(), signal.SIGINT)
    while True:  # the server's socket closes once the session stops it: the interrupt's end is under way
        try:
            httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=1.0)
        except httpx.ConnectError:
            break
        except httpx.HTTPError:
            pass
        time.sleep(0.002)
    os.kill(os.getpid(), signal.SIGINT)

def test_x(llm_server, bench):
    when_tokens(llm_server, 32 + 48, lambda: twice(llm_server))
    bench.run(Scenario("long", dataset="random", input_len=16, output_len=48, num_prompts=60, concurrency=2,
                       warmup=1, seed=1))
"""
    )
    result = run_as_terminal(session, f"--results-dir={session.results}", "-p", "no:cacheprovider", "--llmbench-report")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out[-2000:] + "\n" + watcher_saw(session)
    assert "Traceback" not in out and "During handling" not in out, out[-2000:]
    [rec] = records(session.results, "session")
    assert rec["pytest_exit_status"] == rec["exit_status"] == 2, rec  # what the process exits with
    assert rec["signals"] == ["SIGINT", "SIGINT"]
    headline = "llmbench: FAILED — pytest interrupted (exit status 2)"
    assert headline in result.stdout.str() and (session.results / "summary.md").read_text().startswith(
        f"## ❌ {headline}"
    )
    assert "llmbench: SIGINT then SIGINT received: the later ones came while the session was ending" in out
    assert_nothing_left_running(session.results)


def test_progress_lines_outside_a_terminal_end_at_the_final_count(session):
    """Without a terminal (a CI log) a progress line is written every 10 s: the last one used to stop at
    whatever count it had reached ("3/4 requests") although the scenario finished."""
    session.makepyfile(
        test_x="""
from pytest_llmbench import Scenario

def test_x(llm_server, bench):
    bench.run(Scenario("steady", dataset="random", input_len=16, output_len=32, num_prompts=16, concurrency=2,
                       warmup=1, seed=1))
"""
    )
    result = session.runpytest_subprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-2000:]
    lines = [line for line in result.stdout.lines if line.startswith("[llmbench] steady: ")]
    assert lines, "a scenario of several seconds shows progress"
    assert lines[-1].startswith("[llmbench] steady: 16/16 requests"), lines


def test_an_interrupted_comparison_keeps_its_row_from_the_rounds_played(pytester: pytest.Pytester):
    """Ctrl-C after 4 rounds of a reference-vs-candidate comparison (the same llama-server build on both
    arms): each metric is judged on the rounds both arms finished and written with stop "interrupted", so
    summary.md has its comparison rows. There used to be none, although the rounds had been played."""
    from pytest_llmbench.engines.llamacpp import llamacpp_binary

    from ..conftest import short_context

    pytester.makeconftest(
        """
import os, signal
import pytest

JUDGED = []

@pytest.hookimpl
def pytest_llmbench_record(config, record, item):
    if record["record"] == "comparison_block" and not record["warmup"]:
        JUDGED.append(record)
        if len(JUDGED) == 8:  # 4 rounds, both arms: Ctrl-C in the middle of the comparison
            os.kill(os.getpid(), signal.SIGINT)
"""
    )
    pytester.makepyfile(
        test_bench="""
from pytest_llmbench import Scenario

def test_serving(llm_server, bench):
    bench.run(Scenario("tiny", dataset="random", input_len=16, output_len=8, num_prompts=2, concurrency=1, warmup=1,
                       seed=1))
"""
    )
    folder = str(llamacpp_binary().parent)
    out = pytester.path / "out"
    result = run_as_terminal(
        pytester,
        "-p",
        "no:cacheprovider",
        f"--llmbench-configs={short_context()}",
        f"--results-dir={out}",
        "-k",
        "smol-nospec",
        f"--llmbench-reference-bin={folder}",
        f"--llmbench-candidate-bin={folder}",
        "--llmbench-max-rounds=16",
        "-o",
        "llmbench_compare_restart_rounds=0",
        "--llmbench-report",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    comps = records(out, "comparison")
    assert comps, "the interrupted comparison keeps its rows"
    assert {c["metric"] for c in comps} >= {"output_throughput"}
    for c in comps:
        assert c["stop"] == "interrupted" and c["rounds"] == 4, c
        assert c["stop_reason"].startswith("interrupted (KeyboardInterrupt) after 4 rounds"), c
    summary = (out / "summary.md").read_text()
    comparisons = summary.split("### Comparisons", 1)[-1]
    assert "### Comparisons" in summary, summary
    # the stop reason is said once per scenario in the note above the table, not repeated as a cell per metric
    assert "interrupted (KeyboardInterrupt) after 4 rounds both arms finished" in comparisons, comparisons
    assert_nothing_left_running(out)
