"""report.html of a comparison session as a reader sees it (headless Chromium): q and the suite verdict.

The records are written by the comparison session's own code (tests/compare/test_session.py's
``_session``: CompareSession.check and pytest_sessionfinish into a real results.jsonl), then rendered.
Issue 37: Holm's q lived only in the comparison_budget record and report.html printed "-" for it.
"""

from __future__ import annotations

import pytest

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import html

from ..compare.test_session import _finish, _last, _rounds, _session
from .headless import Chromium, require_chromium

ROWS = """Array.from(document.querySelectorAll('#comparisons-table tbody tr')).map(tr =>
  Array.from(tr.cells).map(td => td.textContent.trim()))
"""
HEADER = """Array.from(document.querySelectorAll('#comparisons-table thead th')).map(th => th.textContent.trim())"""


def test_report_html_shows_q_and_the_suite_verdict(tmp_path, monkeypatch) -> None:
    binary = require_chromium()
    s, bench = _session(tmp_path, strict=False)
    s._last[bench.nodeid] = _last(_rounds(50.0, 0.01))
    for metric in ("output_throughput", "median_ttft_ms"):
        assert s.judges(bench, metric)
        s.check(bench, metric)
    _finish(s, monkeypatch)
    page_path = html.write(read_folder(tmp_path), tmp_path / "no-baselines")
    browser = Chromium(binary)
    try:
        session, page = browser.load(page_path.as_uri(), width=1400, height=900)
        header = browser.evaluate(session, HEADER)
        rows = browser.evaluate(session, ROWS)
        note = browser.evaluate(session, "document.querySelector('#comparisons p.note').textContent")
    finally:
        browser.close()
    assert page.errors == []
    by_metric = {row[header.index("metric")]: row for row in rows}
    tput = by_metric["output_throughput"]
    q = float(tput[header.index("q")])
    suite = {r["metric"]: r for r in read_folder(tmp_path).records if r["record"] == "comparison_suite"}
    assert q == pytest.approx(suite["output_throughput"]["q_value"], rel=1e-2) and q < 0.01
    assert tput[0] == suite["output_throughput"]["suite_verdict"] == "regressed"
    assert by_metric["median_ttft_ms"][header.index("q")] != "-"
    assert "Statistic of output_throughput: per-round ratio" in note  # once per metric, not in every row
