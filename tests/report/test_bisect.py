"""A bisect folder in the report: the steps table (builds, ratio [95% CI], outcome, GPU-s), the builds
table, the finding in summary.md's head and report.html's banner, and the step plot."""

from __future__ import annotations

import pytest

from pytest_llmbench.report import html, summary
from pytest_llmbench.report.bisect import bisect_tables, step_plot, terminal_lines
from pytest_llmbench.report.folder import read_folder

from ..bisect.test_record import run_bisect


@pytest.fixture
def folder(tmp_path):
    run_bisect(tmp_path)
    return read_folder(tmp_path / "out")


def test_the_steps_table_has_one_row_per_comparison(folder):
    steps, builds = bisect_tables(folder)
    assert steps.header == ["step", "kind", "reference → candidate", "metric", "ratio [95% CI]", "outcome", "GPU-s"]
    assert steps.rows[0] == ["1", "ends", "v0 → v5", "output_throughput", "×0.800 [0.780, 0.820]", "different", "12"]
    skip = next(r for r in steps.rows if r[5].startswith("skip"))
    assert skip[2] == "v0 → v2" and skip[4] == "-" and "skip v2: did not materialize" in skip[5]
    assert steps.rows[-1][1] == "confirm" and steps.rows[-1][2] == "v3 → v4"
    assert steps.kinds[0] == "REGRESSED" and steps.note.startswith("first slower build: v4 (last good v3")
    assert [r[:3] for r in builds.rows[:3]] == [["0", "v0", "good"], ["1", "v1", "untested"], ["2", "v2", "skip"]]
    assert builds.rows[4] == ["4", "v4", "bad", "version 4.0.0"]


def test_summary_and_html_lead_with_the_finding(folder):
    md = summary.render(folder)
    assert md.startswith("## ❌ llmbench: REGRESSED — bisect: first slower build: v4")  # the one verdict (headline.py)
    assert (
        "### Bisect: v0 → v5" in md
        and "| **1** | ends | v0 → v5 | output_throughput | ×0.800 [0.780, 0.820] | different | 12 |" in md
    )
    page = html.render(folder)
    assert "REGRESSED — bisect: first slower build: v4" in page
    assert 'id="bisect-0-table"' in page and 'id="plot-bisect"' in page


def test_the_step_plot_draws_every_step_over_the_build_order(folder):
    (plot,) = step_plot(folder)
    assert plot.svg.startswith("<svg") and plot.id == "plot-bisect" and "red different" in plot.caption


def test_terminal_lines_end_with_the_finding(folder):
    rec = folder.kind("bisect")[-1]
    lines = terminal_lines(rec)
    assert lines[0].split() == [
        "step",
        "kind",
        "reference",
        "→",
        "candidate",
        "metric",
        "ratio",
        "[95%",
        "CI]",
        "outcome",
        "GPU-s",
    ]
    assert lines[-1].startswith("bisect: first slower build: v4") and "comparisons, " in lines[-1]


def test_a_folder_without_a_bisect_has_no_bisect_section(tmp_path):
    (tmp_path / "results.jsonl").write_text('{"record": "scenario", "config": "c", "metrics": {}}\n')
    f = read_folder(tmp_path)
    assert bisect_tables(f) == [] and step_plot(f) == []
    md = summary.render(f)
    assert "## llmbench bisect" not in md and "### Bisect" not in md


def test_a_bisect_that_stopped_short_says_what_going_on_needs():
    """The H200 lease-3 record (experiments/data/bisect/gpu_h200_lease3/record): two steps replayed from the
    lease's own record, then no budget for a live one — the builds table says what a resumed run needs built."""
    from pathlib import Path

    record = Path(__file__).resolve().parents[2] / "experiments/data/bisect/gpu_h200_lease3/record"
    steps, builds = bisect_tables(read_folder(record))
    assert [r[2] for r in steps.rows] == ["b11046 → b11434", "b11046 → b11205"]
    assert all(r[6].endswith("(an earlier run's)") for r in steps.rows)
    assert steps.note.startswith("unknown between b11205 and b11434")
    assert builds.note == "To go on (--resume): builds needed, in order: b11205, b11311, b11243, b11368"
    assert "To go on (--resume)" in summary.render(read_folder(record))
