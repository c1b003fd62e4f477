"""A bisect folder in the report: the steps table (builds, ratio [95% CI], outcome, GPU-s), the builds
table, the finding in summary.md's head and report.html's banner, and the step plot."""

from __future__ import annotations

import json

import pytest

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import html, summary
from pytest_llmbench.report.bisect import bisect_tables, step_plot, terminal_lines

from ..bisect.test_record import run_bisect
from ..records.test_verdict import INTERRUPTED, bisect_step


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
    assert md.startswith(
        "## ❌ llmbench: REGRESSED — bisect: first slower build: v4"
    )  # one verdict: records/verdict.py
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


def interrupted_folder(root, steps, started=()):
    """A bisect's --out folder after the machine went: its step lines, a session folder per recorded step,
    and the ``started`` step folders no step line answers; no ``bisect`` line."""
    (root / "results.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    for name in [f"{s['step']:02d}-{s['kind']}-{s['reference']}-vs-{s['candidate']}" for s in steps] + list(started):
        (root / "steps" / name).mkdir(parents=True)
    return read_folder(root)


def test_an_interrupted_bisect_shows_its_steps_the_range_so_far_and_the_step_that_never_finished(tmp_path):
    """The H200 lease-5 folder: five step lines, step 6's session folder, no ``bisect`` line — its report said
    "NOTHING JUDGED" with no bisect table at all."""
    folder = interrupted_folder(tmp_path, INTERRUPTED, started=["04-bisect-b4-vs-b5"])
    (steps,) = bisect_tables(folder)
    assert steps.title == "Bisect (interrupted): b0 → b8"
    assert [r[:3] + r[5:6] for r in steps.rows] == [
        ["1", "ends", "b0 → b8", "different"],
        ["2", "bisect", "b0 → b4", "same"],
        ["3", "bisect", "b4 → b6", "different"],
    ]
    assert steps.kinds == ["REGRESSED", "", "REGRESSED"]
    assert steps.note.startswith(
        "Interrupted after step 3, no finding recorded: so far the first slower build is after b4, up to b6. "
        "Step 4 (bisect b4 → b5) started and has no outcome (steps/04-bisect-b4-vs-b5)."
    )
    assert f"--resume {tmp_path} " in steps.note
    md = summary.render(folder)
    first = md.splitlines()[0]
    assert first.startswith("## ⚠️ llmbench: INCONCLUSIVE — bisect: interrupted after step 3 (no finding recorded)")
    assert first.endswith("(exit status 1)") and folder.session_verdict().exit_status == 1
    assert "### Bisect (interrupted): b0 → b8" in md
    assert "| **3** | bisect | b4 → b6 | output_throughput | ×0.970 [0.960, 0.980] | different | 200 |" in md
    (plot,) = step_plot(folder)
    assert plot.svg.startswith("<svg") and "interrupted" in plot.title
    page = html.render(folder)
    assert "INCONCLUSIVE — bisect: interrupted after step 3" in page and 'id="plot-bisect"' in page


def test_an_interrupted_bisect_whose_ends_were_the_same_has_no_range(tmp_path):
    folder = interrupted_folder(tmp_path, [bisect_step(1, "ends", 0, 8, "same")])
    (steps,) = bisect_tables(folder)
    assert steps.rows[0][:3] == ["1", "ends", "b0 → b8"] and steps.kinds == [""]
    assert steps.note.startswith(
        "Interrupted after step 1, no finding recorded: no range: the ends did not reproduce the slowdown "
        "(b0 → b8: same). To go on:"
    )
    assert folder.session_verdict().exit_status == 1
    assert summary.render(folder).startswith("## ⚠️ llmbench: INCONCLUSIVE — bisect: interrupted after step 1")


def test_a_bisect_cut_before_its_bisect_line_keeps_its_confirmation(tmp_path):
    """Every step answered, the machine gone before the last line: the pair and its confirmation, no builds table."""
    _, _, path = run_bisect(tmp_path)
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    (steps,) = bisect_tables(read_folder(path.parent))
    assert steps.title == "Bisect (interrupted): v0 → v5" and steps.rows[-1][1:3] == ["confirm", "v3 → v4"]
    assert "so far the first slower build is v4 (right after v3), confirmation: different." in steps.note
