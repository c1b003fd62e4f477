"""--llmbench-report and the pytest-html extras inside real pytest sessions (pytester + the real plugin).

The benches here use no server (``bench.check`` gates a number under config ``_noserver_``), so the
session machinery is tested without starting llama-server; the CPU-suite reports are tested in
test_html.py / test_browser.py from a real run's results folder.
"""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]

TEST = """
from pytest_llmbench.gate import Relative

def test_accuracy(bench):
    bench.record("answers", 40)
    bench.check("accuracy", 0.9, noise=Relative(0.1))

def test_plain():
    assert True
"""


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_b=TEST)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """In this process: under -n the controller too (xdist's workers are processes of their own either way)."""
    return pytester.runpytest_inprocess("--runner", "ci-a", "-p", "no:cacheprovider", "--results-dir", "out", *args)


def test_report_option_writes_report_and_summary(session: pytest.Pytester) -> None:
    result = run(session, "--llmbench-report")
    result.assert_outcomes(passed=2)
    out = session.path / "out"
    summary = (out / "summary.md").read_text()
    assert "| new | _noserver_ | test_b.py::test_accuracy | accuracy |" in summary
    page = (out / "report.html").read_text()
    assert "test_b.py::test_accuracy" in page and "<script" not in page
    result.stdout.fnmatch_lines([f"llmbench report: {out / 'report.html'}", f"llmbench summary: {out / 'summary.md'}"])


def test_no_option_no_report(session: pytest.Pytester) -> None:
    run(session).assert_outcomes(passed=2)
    assert (session.path / "out" / "results.jsonl").is_file()
    assert not (session.path / "out" / "report.html").exists()


def test_step_summary_appended_once_under_xdist(session: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the controller writes: two workers, one summary appended after what the file already held."""
    step = session.path / "step_summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    run(session, "--llmbench-report", "-n", "2").assert_outcomes(passed=2)
    text = step.read_text()
    assert text.startswith("earlier step\n")
    assert len(re.findall(r"^## \S+ llmbench: ", text, re.M)) == 1
    assert "test_b.py::test_accuracy" in text
    assert (session.path / "out" / "report.html").is_file()


def test_pytest_html_rows_carry_metrics(session: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html", reason="pytest-html is not installed (it is in the dev extra)")
    run(session, "--html", "ph.html", "--self-contained-html").assert_outcomes(passed=2)
    page = (session.path / "ph.html").read_text()
    # pytest-html 4 stores the rows as escaped JSON in the page; our table travels inside it
    assert "llmbench-metrics" in page
    assert "answers" in page and "accuracy" in page
    assert page.count("llmbench-metrics") == 1  # the bench test only, not test_plain
