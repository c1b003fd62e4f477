"""Every surface of a run says the same thing: exit status, the terminal's last llmbench line, summary.md's
first line, the report.html banner (as Chromium draws it) and the JUnit testsuite properties.

Each case is a real pytest session (pytester, the real plugin, ``--llmbench-report --junitxml``) with no
server: stored-baseline checks go through the real gate against a baseline recorded by a first run; the
comparison cases emit the ``comparison`` / ``comparison_budget`` records compare/session.py writes (the
fields of a real CPU session's records, experiments/report/), since a comparison needs two servers. The
real comparison session is experiments/report/headline_session.sh.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_llmbench.cli.report import main as report_main
from pytest_llmbench.records.verdict import LABEL, State
from tests.records.lines import whole

from .headless import Chromium, require_chromium

pytest_plugins = ["pytester"]

CHECK = 'bench.check("output_throughput", {v}, noise=Relative(0.05))'


def comparison(verdict: str, *, p: float, ratio: float, low: float, high: float, **extra: object) -> str:
    record = {
        "record": "comparison",
        "config": "smol",
        "scenario": "chat-1u",
        "metric": "output_throughput",
        "kind": "ratio",
        "verdict": verdict,
        "family": "serving",
        "higher_is_better": True,
        "reference": 50.0,
        "candidate": 50.0 * ratio,
        "ratio": ratio,
        "ci_low": low,
        "ci_high": high,
        "p_value": p,
        "ignore": 0.01,
        "detect": 0.05,
        "rounds": 6,
        "reference_arm": "bin /opt/llama-11401",
        "candidate_arm": "installed build",
        **extra,
    }
    return f"bench.emit({{**{whole(record, bench=True)!r}, 'nodeid': bench.nodeid}})"


BUDGET = (
    f"bench.emit({{**{whole({'record': 'comparison_budget'}, bench=True)!r}, 'method': 'holm', "
    "'q_values': [{'nodeid': bench.nodeid, 'metric': 'output_throughput', 'q_value': 0.008}], "
    "'suite_regressed': [{'nodeid': bench.nodeid, 'metric': 'output_throughput'}]})"
)

#: case → (body of the bench test, the state every surface must say, the exit status)
CASES = {
    "no checks": (["bench.record('tokens', 12)"], State.NOTHING_JUDGED, 0),
    "stored pass only": ([CHECK.format(v=99.0)], State.PASSED, 0),
    "stored REGRESSED": ([CHECK.format(v=80.0)], State.REGRESSED, 1),
    "comparison regressed, stored pass": (
        [CHECK.format(v=99.0), comparison("regressed", p=1e-4, ratio=0.93, low=0.91, high=0.95)],
        State.REGRESSED,
        1,
    ),
    "comparison inconclusive only": (
        [comparison("inconclusive", p=0.3, ratio=0.99, low=0.95, high=1.03, underpowered=True)],
        State.INCONCLUSIVE,
        0,
    ),
    "suite-level regressed only": (
        [comparison("inconclusive", p=0.004, ratio=0.96, low=0.93, high=1.0), BUDGET],
        State.REGRESSED,
        1,
    ),
    "a failed scenario": (
        [CHECK.format(v=99.0), "raise RuntimeError('scenario chat-1u: 0 of 8 requests completed')"],
        State.FAILED,
        1,
    ),
}

BANNER = """(() => { const b = document.getElementById('banner');
  return {text: b.textContent.trim(), cls: b.className, bg: getComputedStyle(b).backgroundColor}; })()"""
#: the banner's background per tone (report.html.j2)
BACKGROUND = {
    "bad": "rgb(255, 235, 233)",
    "warn": "rgb(255, 248, 197)",
    "neutral": "rgb(246, 248, 250)",
    "good": "rgb(218, 251, 225)",
}
HEADLINE = re.compile(r"^llmbench: (?:" + "|".join(label for label, _, _ in LABEL.values()) + r") — ")


@pytest.fixture(scope="module")
def browser():
    binary = require_chromium()
    b = Chromium(binary)
    yield b
    b.close()


def write_test(pytester: pytest.Pytester, lines: list[str]) -> None:
    body = "\n    ".join(lines)
    pytester.makepyfile(
        test_b=f"from pytest_llmbench.gate import Relative\n\n\ndef test_b(bench):\n    {body}\n",
    )


def run(pytester: pytest.Pytester, results: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--runner", "ci-a", "-p", "no:cacheprovider", f"--results-dir={results}", *args)


@pytest.mark.parametrize("case", list(CASES))
def test_every_surface_says_the_same(pytester: pytest.Pytester, browser: Chromium, case: str) -> None:
    lines, state, exit_status = CASES[case]
    pytester.makeini("[pytest]\n")
    if any("bench.check" in line for line in lines):  # the stored baseline the checks are judged against
        write_test(pytester, [CHECK.format(v=100.0)])
        run(pytester, pytester.path / "recording", "--update-baselines").assert_outcomes(passed=1)
    write_test(pytester, lines)
    results = pytester.path / "results"
    r = run(pytester, results, "--llmbench-report", "--junitxml=junit.xml")

    terminal = [line for line in r.outlines if HEADLINE.match(line)]
    assert len(terminal) == 1, r.outlines
    line = terminal[0]
    label, mark, tone = LABEL[state]
    assert line.startswith(f"llmbench: {label} — ") and line.endswith(f"(exit status {exit_status})")
    assert r.ret == exit_status, line
    assert [x for x in r.outlines if x.startswith("llmbench")][-1] == line, "the verdict is the last llmbench line"

    first = (results / "summary.md").read_text(encoding="utf-8").splitlines()[0]
    assert first == f"## {mark} {line}"

    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["llmbench.verdict"] == state.value
    assert props["llmbench.headline"] == line
    assert props["llmbench.exit_status"] == str(exit_status)

    session, page = browser.load((results / "report.html").as_uri())
    banner = browser.evaluate(session, BANNER)
    assert page.errors == []
    assert banner["text"] == line
    assert banner["cls"] == f"banner {tone}" and banner["bg"] == BACKGROUND[tone]
    if state is not State.PASSED:
        assert banner["bg"] != BACKGROUND["good"]

    assert report_main([str(results), "--check", "--no-step-summary"]) == exit_status
    assert report_main([str(results), "--no-step-summary"]) == 0
