"""Issue 54's review of the report's surfaces, checked on real results folders (tests/report/data).

The figures store text as paths, so what a reader sees is read from the SVG itself: matplotlib writes
each text's string as a comment before its glyphs, and the glyphs' ``scale(s -s)`` is the font size in
points / 100.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import pytest

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import forest_plot, plots
from pytest_llmbench.report import rows as R
from pytest_llmbench.report.bisect import step_plot

DATA = Path(__file__).parent / "data"
#: an underpowered A/A comparison on the 2-core CPU (experiments/data/compare/slow_start_cpu/aa-loaded)
UNDERPOWERED = DATA / "compare-underpowered"
#: a real bisect over 34 llama.cpp builds on an H200 (experiments/data/bisect/gpu_h200_lease6)
BISECT_34 = DATA / "bisect-h200-34-builds"
FIGURE_PX = 1134  # report.html's figure box: a 1200 px body, less its padding and the figure's border
PX_PER_PT = 96 / 72


def texts(svg: str) -> list[str]:
    return re.findall(r"<!-- (.*?) -->", svg)


def displayed_px(svg: str, points: float) -> float:
    """The height on the page of text ``points`` high in ``svg``, once the page scales it to its box."""
    width_pt = float(re.search(r'<svg[^>]*width="([\d.]+)pt"', svg).group(1))
    return points * PX_PER_PT * min(1.0, FIGURE_PX / (width_pt * PX_PER_PT))


def test_the_comparison_table_says_each_scenarios_stop_reason_once_and_why_each_row_is_inconclusive():
    folder = read_folder(UNDERPOWERED)
    table = R.comparison_table(folder)
    stop = folder.comparisons()[0]["stop_reason"]
    assert stop.startswith("underpowered: needs ~12180 rounds")
    assert all(stop not in cell for row in table.rows for cell in row)  # not repeated in each row
    assert table.note.count(stop) == 1
    why = [row[table.header.index("why")] for row in table.rows]
    assert len(why) == 3 and all(w.startswith("underpowered; interval not clear of ±") for w in why)
    tput = next(row for row in table.rows if row[table.header.index("metric")] == "output_throughput")
    assert tput[-1].endswith("interval not clear of ±1% (ignore), not inside ±3% (detect)")  # its own sizes
    assert max(len(cell) for row in table.rows for cell in row) <= 80


def test_the_forest_plot_draws_and_labels_both_bands_and_says_why_each_row_is_inconclusive():
    (plot,) = forest_plot.comparison_forest(read_folder(UNDERPOWERED))
    shown = texts(plot.svg)
    assert "± ignore: regressed/improved when the interval clears it" in shown
    assert "± detect: equivalent when the interval lies inside it" in shown
    rows = [t for t in shown if t.startswith("inconclusive")]
    assert len(rows) == 3
    assert all(t.startswith("inconclusive: underpowered · ignore ±") for t in rows)
    assert "inconclusive: underpowered · ignore ±1%, detect ±3%" in rows  # output_throughput's own sizes


def test_a_single_serving_point_is_on_a_linear_axis_with_its_value_written(tmp_path):
    folder = read_folder(UNDERPOWERED)  # one scenario: one point per panel
    (scenario,) = folder.kind("scenario")
    (plot,) = plots.throughput_vs_prompt(folder)
    shown = texts(plot.svg)
    assert not any("10^{" in t for t in shown)  # no lone decade label of a log axis
    assert f"{scenario['metrics']['output_throughput']:,.1f}" in shown
    assert f"{scenario['metrics']['median_tpot_ms']:,.1f}" in shown


def test_serving_points_across_a_wide_prompt_range_keep_the_log_axis():
    (plot,) = plots.throughput_vs_prompt(read_folder(DATA / "cpu-run-a"))
    assert any("10^{" in t for t in texts(plot.svg))


def _tick_labels(svg: str, plot_id: str) -> list[tuple[str, float, float, float]]:
    """(label, x in pt, angle in degrees, size in pt) of each x tick label."""
    found = []
    pattern = rf'id="{plot_id}-xtick_\d+">.*?<!-- (.+?) -->\s*<g transform="translate\(([\d.]+) [\d.]+\)(?: rotate\((-?[\d.]+)\))? scale\(([\d.]+) '
    for m in re.finditer(pattern, svg, re.S):
        found.append((m.group(1), float(m.group(2)), -float(m.group(3) or 0), 100 * float(m.group(4))))
    return found


def test_the_bisect_step_plot_names_its_builds_readably_over_34_builds():
    folder = read_folder(BISECT_34)
    rec = folder.kind("bisect")[-1]
    assert len(rec["builds"]) == 34
    (plot,) = step_plot(folder)
    labels = _tick_labels(plot.svg, "plot-bisect")
    compared = {s[end] for s in rec["steps"] for end in ("reference", "candidate") if s.get(end)}
    assert compared <= {label for label, *_ in labels}  # every build a step compared is named
    for label, _, _, size in labels:
        assert displayed_px(plot.svg, size) >= 10, label  # the review measured ~5 px
    for (a, xa, angle, size), (b, xb, _, _) in itertools.pairwise(labels):
        # parallel labels dx apart at angle a are dx·sin(a) apart: at least a font height, or they overlap
        assert (xb - xa) * math.sin(math.radians(angle)) >= size, (a, b)


@pytest.mark.parametrize("builds", [3, 12, 40, 400])
def test_the_bisect_step_plot_stays_readable_at_any_number_of_builds(tmp_path, builds):
    rec = json.loads(next(line for line in (BISECT_34 / "results.jsonl").open() if '"record": "bisect"' in line))
    labels = [f"b{11000 + i}" for i in range(builds)]
    rec["builds"] = [{"label": label, "index": i} for i, label in enumerate(labels)]
    steps = []
    for k, (ref, cand) in enumerate([(0, builds - 1), (0, builds // 2), (builds // 2, 3 * builds // 4)]):
        step = dict(rec["steps"][0], step=k + 1, reference=labels[ref], candidate=labels[cand])
        steps.append(dict(step, reference_index=ref, candidate_index=cand))
    rec.update(steps=steps, last_good=labels[builds // 2], first_bad=labels[3 * builds // 4])
    (tmp_path / "results.jsonl").write_text(json.dumps(rec) + "\n")
    (plot,) = step_plot(read_folder(tmp_path))
    shown = _tick_labels(plot.svg, "plot-bisect")
    assert {labels[0], labels[-1], labels[builds // 2]} <= {label for label, *_ in shown}
    assert all(displayed_px(plot.svg, size) >= 10 for *_, size in shown)
