"""The report's pytest side: ``--llmbench-report`` and pytest-html extras.

Wiring — the plugin makes these two calls (like the gate)::

    add_options(parser)                                                 # in pytest_addoption
    config.pluginmanager.register(ReportSession(config), "llmbench-report")   # in pytest_configure

At the end of a session the controller (never an xdist worker: it sees every worker's results file)
writes report.html and summary.md into the results folder and appends the summary to
``$GITHUB_STEP_SUMMARY`` when that is set. When pytest-html is active, each bench test's row gets its
metrics as an HTML table and its figures as SVG images, through pytest-html's ``report.extras`` list.
"""

from __future__ import annotations

import base64
import html as html_escape
from pathlib import Path
from typing import Any

import pytest

from pytest_llmbench import stash
from pytest_llmbench.gate.types import fmt
from pytest_llmbench.jsonl import iter_jsonl


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
        results = self.config.stash.get(stash.RESULTS, None)
        if not self.enabled or self.is_worker or results is None or not any(results.dir.glob("results*.jsonl")):
            return
        from pytest_llmbench.gate.options import baselines_dir
        from pytest_llmbench.report.build import write_report

        try:
            self.written = write_report(results.dir, baselines_dir(self.config))
        except Exception as e:  # a report must never turn a passing gate into an internal error
            self.error = f"{type(e).__name__}: {e}"

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
        if report.when == "call" and "bench" in funcargs and item.config.pluginmanager.has_plugin("html"):
            try:
                extras = bench_extras(item, funcargs["bench"])
            except Exception as e:  # extras decorate a report; they never fail a test
                extras = [_html_extra(f"<p>llmbench extras failed: {html_escape.escape(repr(e))}</p>")]
            report.extras = [*getattr(report, "extras", []), *extras]
        return report


def _html_extra(content: str) -> dict[str, Any]:
    from pytest_html import extras

    return extras.html(content)


def bench_extras(item: pytest.Item, bench: Any) -> list[dict[str, Any]]:
    """This test's metrics (an HTML table) and figures (SVG images), read back from its results lines."""
    from pytest_html import extras

    from pytest_llmbench.gate.options import baselines_dir
    from pytest_llmbench.report import plots as P
    from pytest_llmbench.report.folder import ResultsFolder

    results = item.config.stash[stash.RESULTS]
    records = []
    if results.path.is_file():
        records = [r for _, r in iter_jsonl(results.path) if item.nodeid in (r.get("test"), r.get("nodeid"))]
    out = [extras.html(metrics_table(bench.measurements, [r for r in records if r.get("record") == "verdict"]))]
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


def metrics_table(measurements: dict[str, Any], verdicts: list[dict[str, Any]]) -> str:
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
