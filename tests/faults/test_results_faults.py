"""Faults in the results folder: a line torn by a crash, a folder that cannot hold files, a full disk, two
sessions writing one folder at once, and a session whose every server failed to start. Each runs as a
user's CI meets it: a pytest session of its own with the real llama-server, then the CLIs on the folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from pytest_llmbench import load_results

from .conftest import assert_nothing_left_running, records, smol_configs

pytestmark = pytest.mark.integration

TINY = """
from pytest_llmbench import Scenario

def test_x(llm_server, bench):
    bench.run(Scenario("{name}", dataset="random", input_len=16, output_len=8, num_prompts=2, concurrency=1, warmup=1,
                       seed=1))
"""


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_llmbench", *args], capture_output=True, text=True, timeout=120)


def test_a_torn_last_line_is_skipped_with_a_warning_by_the_next_session_every_cli_and_load_results(session, tmp_path):
    """A crash mid-write leaves the last line of results.jsonl cut short. The next session into the folder
    used to die with INTERNALERROR, and report, merge and load_results refused the whole folder."""
    session.makepyfile(test_x=TINY.format(name="first"))
    assert session.runpytest_subprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider").ret == 0
    path = session.results / "results.jsonl"
    lines = path.read_text().splitlines()
    torn = lines[-1][: len(lines[-1]) // 2]
    path.write_text("\n".join([*lines[:-1], torn]))  # what a SIGKILL mid-write leaves: no newline either
    n_torn = len(lines)

    session.makepyfile(test_x=TINY.format(name="second"))
    result = session.runpytest_subprocess(f"--results-dir={session.results}", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 0 and "INTERNALERROR" not in out, out[-2000:]
    result.stdout.fnmatch_lines([f"llmbench: {path}:{n_torn}: skipped a line cut short*"])
    assert "llmbench: NOTHING JUDGED — 1 test passed (exit status 0)" in out  # its own session only
    kept = path.read_text().splitlines()
    assert kept[n_torn - 1] == torn, "the torn line is kept as it was, on a line of its own"
    assert all(json.loads(line) for i, line in enumerate(kept) if i != n_torn - 1)
    assert [r["scenario"] for r in records_skipping(session.results, "scenario")] == ["first", "second"]

    report = cli("report", str(session.results))
    assert report.returncode == 0 and f"{path}:{n_torn}: skipped a line cut short" in report.stderr, report.stderr
    merged = cli("merge", str(tmp_path / "merged"), str(session.results))
    assert merged.returncode == 0 and "cut short" in merged.stderr, merged.stderr
    assert len((tmp_path / "merged" / "results.jsonl").read_text().splitlines()) == len(kept) - 1
    with pytest.warns(UserWarning, match=f"results.jsonl:{n_torn}: skipped a line cut short"):
        frame = load_results(session.results)
    assert list(frame["scenario"]) == ["first", "second"]


def records_skipping(results: Path, kind: str) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the torn line's warning: asserted above
        from pytest_llmbench.records.results import iter_records

        return list(iter_records(results, kind))


def test_a_results_dir_under_proc_is_refused_before_any_server_starts(session):
    """/proc passes ``os.access`` for root; the session used to start and then fail with a traceback."""
    session.makepyfile(test_x=TINY.format(name="never"))
    result = session.runpytest_subprocess("--results-dir=/proc/llmbench-results", "-p", "no:cacheprovider")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-1500:] + err
    assert "--results-dir / ini llmbench_results_dir: cannot write results to /proc/llmbench-results" in err
    assert "Traceback" not in err + result.stdout.str()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 4 MiB tmpfs (root and a mount namespace that allows it; else skipped): a disk that really fills."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_keeps_the_old_report_whole_and_fails_the_session(session, small_disk, monkeypatch):
    """The disk fills during the session (another job's files): the session record and summary.md still
    fit, report.html does not. It used to be left truncated, with exit status 0."""
    results = small_disk / "results"
    results.mkdir()
    old_page = "<html><body>the previous night's report</body></html>\n"
    (results / "report.html").write_text(old_page)
    monkeypatch.setenv("FILLER", str(small_disk / "filler"))
    session.makepyfile(
        test_x=TINY.format(name="tiny")
        + """
import os

def test_zz_disk_fills(llm_server):
    with open(os.environ["FILLER"], "wb") as f:  # fill the disk, then give back 32 KiB: records fit, a page not
        try:
            while True:
                f.write(b"x" * 65536)
                f.flush()
        except OSError:
            pass
    os.truncate(os.environ["FILLER"], os.path.getsize(os.environ["FILLER"]) - 32 * 1024)
"""
    )
    result = session.runpytest_subprocess(f"--results-dir={results}", "-p", "no:cacheprovider", "--llmbench-report")
    out = result.stdout.str()
    assert result.ret == 1 and "INTERNALERROR" not in out, out[-2500:]
    assert "llmbench report failed: OSError: [Errno 28] No space left on device" in out, out[-2500:]
    result.stdout.fnmatch_lines(
        ["llmbench: FAILED — the report could not be written (OSError: [[]Errno 28[]]*(exit status 1)"]
    )
    assert (results / "report.html").read_text() == old_page, "the old page stays whole"
    assert not list(results.glob(".report.html.*")), "no temp file left behind"
    assert_nothing_left_running(results)


def test_two_sessions_writing_one_results_dir_at_once_stay_apart(pytester: pytest.Pytester, tmp_path: Path):
    """Two sessions of the same config into one --results-dir at the same time: each headline and table
    counts its own session, the servers log into files of their own, and neither summary overwrites the
    other. Each used to count both sessions' results and log into one server.log."""
    pytester.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol, marks: [cpu]}")})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    results = tmp_path / "shared"
    for name in ("a", "b"):  # each waits, once measured, until the other has measured too: they overlap
        pytester.makepyfile(
            **{
                f"test_{name}": TINY.format(name=f"scenario_{name}")
                + f"""
    import glob, time
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and sum(
        '"record": "scenario"' in line for f in glob.glob({str(results)!r} + "/results*.jsonl") for line in open(f)
    ) < 2:
        time.sleep(0.1)
"""
            }
        )
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--results-dir={results}", "--llmbench-report"]
    first = pytester.popen(
        [*args, "test_a.py"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (results / "smol" / "server.log").exists():
        time.sleep(0.1)  # the second starts once the first's server runs: the same config, one folder
    second = pytester.popen(
        [*args, "test_b.py"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )
    outs = {}
    for name, proc in (("a", first), ("b", second)):
        outs[name] = proc.communicate(timeout=400)[0].decode()
        assert proc.returncode == 0, outs[name][-2000:]
    ids = {}
    for name, other in (("a", "b"), ("b", "a")):
        out = outs[name]
        assert "llmbench: NOTHING JUDGED — 1 test passed (exit status 0)" in out, out[-2000:]
        assert f"scenario_{name}" in out and f"scenario_{other}" not in out, out[-2000:]
        summary = Path(
            next(line for line in out.splitlines() if line.startswith("llmbench summary: ")).split(": ", 1)[1]
        )
        text = summary.read_text()
        assert f"scenario_{name}" in text and f"scenario_{other}" not in text and "1 test passed" in text
        [sc] = [r for r in records(results, "scenario") if r["scenario"] == f"scenario_{name}"]
        ids[name] = sc["session_id"]
    assert ids["a"] != ids["b"] and {r["session_id"] for r in records(results)} == set(ids.values())
    logs = sorted((results / "smol").rglob("server*.log"))
    assert len(logs) == 2, logs
    assert all(log.read_text().count("[llmbench] starting config smol") == 1 for log in logs)
    assert not list(results.glob(".llmbench-session.*")), "each session removed its marker"
    assert_nothing_left_running(results)


def test_every_server_failing_to_start_still_gives_the_headline_and_the_reports(session):
    """Every start fails (a flag llama-server does not know): the run has a verdict, summary.md and
    report.html all the same. There used to be none, even with --llmbench-report."""
    session.makefile(".yaml", **{"configs/servers": smol_configs("{name: smol, marks: [cpu], args: [--no-such-flag]}")})
    session.makepyfile(
        test_x="""
def test_one(llm_server):
    pass

def test_two(llm_server):
    pass
"""
    )
    result = session.runpytest_subprocess(
        f"--results-dir={session.results}", "-p", "no:cacheprovider", "--llmbench-report"
    )
    out = result.stdout.str()
    assert result.ret == 1, out[-2000:]
    headline = (
        "llmbench: FAILED — 2 tests failed (test_x.py::test_one[smol], test_x.py::test_two[smol]) (exit status 1)"
    )
    assert headline in out.splitlines(), out[-2000:]
    assert (session.results / "summary.md").read_text().startswith(f"## ❌ {headline}")
    assert headline in (session.results / "report.html").read_text()
    assert [r["record"] for r in records(session.results)] == ["session_start", "session"]
    assert os.path.isfile(session.results / "smol" / "server.log")
