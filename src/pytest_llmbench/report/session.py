"""The report's pytest side: the session verdict, ``--llmbench-report`` and pytest-html extras.

Wiring — the plugin makes these calls (like the gate)::

    add_options(parser)                                                 # in pytest_addoption
    config.pluginmanager.register(HeadlineSession(config), "llmbench-headline")  # before the gate
    config.pluginmanager.register(ReportSession(config), "llmbench-report")   # in pytest_configure

:class:`HeadlineSession` computes the run's one verdict (records/verdict.py) at session end, once the
gate and the comparisons have written their end-of-session records (their ``pytest_sessionfinish`` are
``tryfirst`` and registered after it, so they run first) and before the JUnit file is written; it sets
the exit status, writes the ``session`` record the report reads back, and prints the terminal's last
llmbench line.

At the end of a session the controller (never an xdist worker: it sees every worker's results file)
writes report.html and summary.md into the results folder and appends the summary to
``$GITHUB_STEP_SUMMARY`` when that is set. When pytest-html is active, each bench test's row gets its
metrics as an HTML table and its figures as SVG images, through pytest-html's ``report.extras`` list.
"""

from __future__ import annotations

import base64
import html as html_escape
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmbench import interrupts, sink
from pytest_llmbench.gate.types import fmt
from pytest_llmbench.jsonl import TornLineWarning, iter_jsonl
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.records.results import RESULTS
from pytest_llmbench.report import junit

if TYPE_CHECKING:
    from pytest_llmbench.records.verdict import SessionVerdict


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmbench-report", "llmbench reports")
    group.addoption(
        "--llmbench-report",
        dest="llmbench_report",
        action="store_true",
        default=False,
        help="at the end of the session write report.html and summary.md into the results folder "
        "(and append the summary to $GITHUB_STEP_SUMMARY when it is set)",
    )


class HeadlineSession:
    """The run's verdict; nothing on xdist workers (the controller sees every test's report)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        self.failed: dict[str, None] = {}  # nodeids of failed or errored tests, in order
        self.passed = 0
        self.problems: list[str] = []
        self.verdict: SessionVerdict | None = None
        self.started = False  # a session_start record was written (by this process)
        self.torn: list[str] = []  # lines cut short that reading the results skipped (jsonl.TornLineWarning)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """The first test that starts a server or measures writes ``session_start``: a session whose every
        server failed to start still has its records, headline and summary."""
        if self.started or not {"llm_server", "bench"} & set(getattr(item, "fixturenames", ())):
            return
        self.started = True
        import os
        import sys

        from pytest_llmbench.records.results import now

        sink.emit(self.config, {"record": "session_start", "pid": os.getpid(), "argv": sys.argv[1:], "time": now()})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed.setdefault(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed += 1

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.problems.append(f"collection error in {report.nodeid or 'the session'}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        results = self.config.stash.get(RESULTS, None)
        if self.is_worker or results is None or not any(results.dir.glob("results*.jsonl")):
            return  # nothing of llmbench ran: pytest's own outcome stands
        from pytest_llmbench.records.results import iter_records
        from pytest_llmbench.records.verdict import session_verdict

        # this session's records only: a reused folder's earlier sessions and a concurrent one stay apart
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", TornLineWarning)
            records = list(iter_records(results.dir, session=results.session_id))
        self.torn = [str(w.message) for w in seen if issubclass(w.category, TornLineWarning)]
        status = int(session.exitstatus)
        if interrupts.state.terminated:
            status = interrupts.TERMINATED_EXIT
        outcome: dict[str, Any] = {
            "record": "session",
            "pytest_exit_status": status,
            "tests": {"passed": self.passed, "failed": len(self.failed)},
            "failed": list(self.failed),
            "problems": list(self.problems),
            "signals": list(interrupts.state.received),
        }
        verdict = session_verdict([*records, outcome])
        if status == pytest.ExitCode.TESTS_FAILED and verdict.exit_status == 0:
            outcome["problems"].append("pytest reported a failure outside any test")  # never a green exit 1
            verdict = session_verdict([*records, outcome])
        try:
            sink.emit(
                self.config,
                {
                    **outcome,
                    "verdict": verdict.state.value,
                    "exit_status": verdict.exit_status,
                    "headline": verdict.line(),
                },
            )
        except OSError as e:  # a full disk: said in the verdict and the exit status, never an INTERNALERROR
            outcome["problems"].append(f"the session record could not be written to {results.path} ({e.strerror or e})")
            verdict = session_verdict([*records, outcome])
        self.verdict = verdict
        if status in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode(verdict.exit_status)
        elif status == interrupts.TERMINATED_EXIT:
            session.exitstatus = status  # 143, as a shell reports a job that died of SIGTERM
        junit.add_session_verdict(self.config, verdict)

    def add_problem(self, session: pytest.Session, problem: str) -> None:
        """A failure found after the verdict (the report could not be written): the verdict, the terminal
        line and the exit status say it too."""
        if self.verdict is None:
            return
        from pytest_llmbench.records.verdict import Finding, SessionVerdict, State

        findings = (*self.verdict.findings, Finding(State.FAILED, problem))
        status = self.verdict.exit_status or 1
        self.verdict = SessionVerdict(min((f.state for f in findings), key=lambda s: s.rank), findings, status)
        if int(session.exitstatus) == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        for torn in self.torn:  # a crash of an earlier session in this folder: said, and the line kept
            terminalreporter.write_line(f"llmbench: {torn}", yellow=True)
        received = interrupts.state.received
        if interrupts.state.terminated:
            terminalreporter.write_line(
                "llmbench: terminated by SIGTERM (a cancelled CI job): the finished requests are kept, "
                "every server was stopped",
                red=True,
            )
        if len(received) > 1:
            terminalreporter.write_line(
                f"llmbench: {' then '.join(received)} received: the later ones came while the session was "
                "ending, which went on (its servers stopped, its records and summary written)",
                yellow=True,
            )
        tone = self.verdict.tone
        terminalreporter.write_line(
            self.verdict.line(), bold=True, red=tone == "bad", green=tone == "good", yellow=tone in ("warn", "neutral")
        )


class ReportSession:
    """One per pytest process; writes nothing on xdist workers."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.enabled = bool(config.getoption("llmbench_report", False))
        self.is_worker = hasattr(config, "workerinput")
        self.written: Any = None
        self.error: str | None = None

    # --- --llmbench-report ----------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        results = self.config.stash.get(RESULTS, None)
        if not self.enabled or self.is_worker or results is None or not any(results.dir.glob("results*.jsonl")):
            return
        from pytest_llmbench.gate.options import baselines_dir
        from pytest_llmbench.report.build import write_report

        # this session's records; while another session writes the folder too, files of its own name
        suffix = f".{results.session_id}" if results.others_live() else ""
        try:
            self.written = write_report(
                results.dir, baselines_dir(self.config), session=results.session_id, suffix=suffix
            )
        except Exception as e:  # a report must never turn into an internal error, nor pass as written
            self.error = f"{type(e).__name__}: {e}"
            headline = self.config.pluginmanager.get_plugin("llmbench-headline")
            if headline is not None:
                headline.add_problem(session, f"the report could not be written ({self.error})")
            try:  # for a later `report` of the folder; on a full disk this line cannot be written either
                sink.emit(self.config, {"record": "session_error", "source": "report", "message": self.error})
            except OSError:
                pass

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not self.enabled:
            return
        tr = terminalreporter
        if self.error:
            tr.write_line(f"llmbench report failed: {self.error}", red=True)
        elif self.written is not None:
            tr.write_line(
                f"llmbench report: {self.written.html or '(no report.html: ' + str(self.written.html_error) + ')'}"
            )
            tr.write_line(f"llmbench summary: {self.written.summary}")
            if self.written.step_summary:
                tr.write_line(f"llmbench summary appended to $GITHUB_STEP_SUMMARY ({self.written.step_summary})")

    # --- pytest-html extras ---------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        report = yield
        funcargs = getattr(item, "funcargs", {})  # a pytest.Function's; other items have none
        # only when pytest-html writes a page (--html): installed, its plugin loads in every session, and the
        # figures (matplotlib) cost ~0.5 s a session and more per test for a page nobody asked for
        if report.when == "call" and "bench" in funcargs and _html_page_asked(item.config):
            try:
                extras = bench_extras(item, funcargs["bench"])
            except Exception as e:  # extras decorate a report; they never fail a test
                extras = [_html_extra(f"<p>llmbench extras failed: {html_escape.escape(repr(e))}</p>")]
            report.extras = [*getattr(report, "extras", []), *extras]
        return report


def _html_page_asked(config: pytest.Config) -> bool:
    return config.pluginmanager.has_plugin("html") and bool(config.getoption("htmlpath", None))


def _html_extra(content: str) -> dict[str, Any]:
    from pytest_html import extras

    return extras.html(content)


def bench_extras(item: pytest.Item, bench: Any) -> list[dict[str, Any]]:
    """This test's metrics (an HTML table) and figures (SVG images), read back from its results lines."""
    from pytest_html import extras

    from pytest_llmbench.gate.options import baselines_dir
    from pytest_llmbench.records.folder import ResultsFolder
    from pytest_llmbench.report import plots as P

    results = item.config.stash[RESULTS]
    records = []
    if results.path.is_file():
        records = [
            r for _, r in iter_jsonl(results.path, torn="warn") if item.nodeid in (r.get("test"), r.get("nodeid"))
        ]
    out = [extras.html(metrics_table(bench.measurements, of_kind(records, "verdict")))]
    folder = ResultsFolder(Path(results.dir), records)
    figures = [
        *P.ttft_vs_decode(folder),
        *P.accept_length(folder),
        *P.bfcl_categories(folder),
        *P.history(folder, baselines_dir(item.config)),
    ]
    for fig in figures:
        out.append(extras.svg(base64.b64encode(fig.svg.encode("utf-8")).decode("ascii"), name=fig.title))
    return out


def metrics_table(measurements: dict[str, Any], verdicts: Sequence[Mapping[str, Any]]) -> str:
    """The bench's recorded numbers and its verdicts as a small HTML table."""
    esc = html_escape.escape
    cells = []
    for name, value in measurements.items():
        if isinstance(value, (list, tuple)) and len(value) > 8:
            value = f"{len(value)} values"
        shown = fmt(value) if isinstance(value, float) else str(value)
        cells.append(f"<tr><td>{esc(name)}</td><td>{esc(shown)}</td><td></td></tr>")
    for v in verdicts:
        cells.append(
            f"<tr><td>{esc(str(v.get('metric')))}</td><td>{esc(fmt(v.get('observed')))} vs "
            f"{esc(fmt(v.get('baseline')))} ± {esc(fmt(v.get('tolerance')))}</td>"
            f"<td>{esc(str(v.get('status')))}</td></tr>"
        )
    return (
        '<table class="llmbench-metrics"><thead><tr><th>metric</th><th>value</th><th>verdict</th></tr></thead>'
        f"<tbody>{''.join(cells)}</tbody></table>"
    )
