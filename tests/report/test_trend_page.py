"""history.html as a person sees it: the campaign's real nights (tests/history/data) rendered by headless
Chromium: no console errors, one drawn figure per series, the change-point table as the analysis found it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.history.analysis import find_changes, new_findings
from pytest_llmbench.history.series import RATIO, Point, Series, SeriesKey, build_series, expand, read_nights
from pytest_llmbench.report import trend_page

from .headless import PLOT_BOXES, Chromium, blank_fraction, require_chromium, table_rows

DATA = Path(__file__).parents[1] / "history" / "data"
CHANGE_ROWS = table_rows("changes-table")


@pytest.fixture(scope="module")
def analysed():
    nights = read_nights(expand([str(DATA / "night-*")]))
    series = build_series(nights)
    findings = find_changes(series)
    return series, nights, findings, new_findings(findings, nights, 3)


@pytest.fixture(scope="module")
def rendered(analysed, tmp_path_factory: pytest.TempPathFactory):
    binary = require_chromium()
    path = trend_page.write(tmp_path_factory.mktemp("trend") / "history.html", *analysed, 3)
    browser = Chromium(binary)
    try:
        session, page = browser.load(path.as_uri(), width=1280, height=900)
        boxes = browser.evaluate(session, PLOT_BOXES)
        rows = browser.evaluate(session, CHANGE_ROWS)
    finally:
        browser.close()
    return page, boxes, rows


def test_no_console_errors_and_one_drawn_figure_per_series(analysed, rendered) -> None:
    series = analysed[0]
    page, boxes, _ = rendered
    assert page.errors == [] and page.png.startswith(b"\x89PNG")
    assert len(boxes) == len(series)
    for box in boxes:
        assert box["has_svg"] and box["width"] > 300 and box["height"] > 80, box
        white, colours = blank_fraction(page.png, box) if box["y"] + box["height"] <= page.height else (0.0, 99)
        assert white < 0.97 and colours > 20, f"{box['id']}: blank ({white:.1%} white, {colours} colours)"


def test_the_change_table_is_what_the_analysis_found(analysed, rendered) -> None:
    findings = analysed[2]
    _, _, rows = rendered
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("worse" if f.worse else "better", f.series.key.config, f.series.key.metric, f.first_after.night)
        for f in findings
    ]
    assert all("same build; server args" in r[-1] for r in rows)


def test_series_with_a_new_worse_change_come_first(analysed) -> None:
    nights = analysed[1][:15]
    series = build_series(nights)
    findings = find_changes(series)
    new = new_findings(findings, nights, 5)
    html = trend_page.render(series, nights, findings, new, 5)
    first_title = html.split("<figcaption><b>", 1)[1].split(".</b>", 1)[0]
    assert first_title in {f.series.key.label() for f in new if f.worse}
    assert "new change point(s) for the worse in the last 5 night(s)" in html


def test_comparison_verdicts_are_drawn_over_their_nights() -> None:
    key = SeriesKey("cpu-x", "c", "t.py::test[s]", "output_throughput")
    points = [Point(f"n{i}", f"t{i}", 10.0 + (i % 3) * 0.1, "b", "", "pass") for i in range(8)]
    points[5] = Point("n5", "t5", 9.0, "b2", "", "REGRESSED", comparison="regressed", comparison_ratio=0.9)
    plot = trend_page.series_plot(Series(key, "higher", points), [], [], 0)
    assert "triangles above the plot: that night's in-session comparison" in plot.caption
    assert plot.svg.startswith("<svg") and plot.id in plot.svg


def test_comparison_triangles_sit_above_the_nights_and_are_in_the_legend(monkeypatch) -> None:
    """Issue 54's screenshots: drawn at the series' maximum, a triangle hid the highest night's dot."""
    drawn = []
    monkeypatch.setattr(trend_page, "_svg", lambda fig, pid: drawn.append(fig) or "<svg/>")
    key = SeriesKey("cpu-x", "c", "t.py::test[s]", "output_throughput")
    points = [Point(f"n{i}", f"t{i}", 10.0, "b", "", "pass", comparison="equivalent") for i in range(6)]
    points[3] = Point("n3", "t3", 12.0, "b2", "", "REGRESSED", comparison="regressed", comparison_ratio=0.9)
    trend_page.series_plot(Series(key, "higher", points), [], [], 0)
    (ax,) = drawn[0].axes
    triangles = [line for line in ax.get_lines() if line.get_marker() == "v"]
    assert sorted(line.get_label() for line in triangles) == ["comparison: equivalent", "comparison: regressed"]
    for line in triangles:  # y in axes fraction, past the frame: above every night, whatever its value
        assert line.get_transform() == ax.get_xaxis_transform() and min(line.get_ydata()) > 1.0
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"comparison: regressed", "comparison: equivalent"}


def test_a_ratio_series_draws_its_intervals_and_the_re_pin() -> None:
    key = SeriesKey("cpu-x", "c", "t.py::test[s]", "output_throughput", RATIO)
    points = [
        Point(f"n{i}", f"t{i}", 1.0 if i < 4 else 0.9, "b", "", None, reference="p1" if i < 4 else "p2", se=0.01)
        for i in range(8)
    ]
    plot = trend_page.series_plot(Series(key, "higher", points), [], [], 0)
    assert "bars: each night's 95% interval" in plot.caption and "dotted: the reference was re-pinned" in plot.caption
    assert "re-pinned" in plot.svg and plot.title.endswith("output_throughput / reference (cpu-x)")


@pytest.mark.parametrize("kind", ["value", RATIO])
def test_every_text_of_a_trend_plot_lies_inside_its_figure(monkeypatch, kind) -> None:
    """Issue 54's screenshots: the y label "mean_tpot_ms: ratio to reference (×)" ran past the figure's top
    and was cut to "…ratio to referen"."""
    drawn = []
    monkeypatch.setattr(trend_page, "_svg", lambda fig, pid: drawn.append(fig) or "<svg/>")
    key = SeriesKey("cpu-x", "c", "t.py::test[s]", "mean_tpot_ms", *([kind] if kind == RATIO else []))
    points = [Point(f"20261205T10{i:02d}00Z-nightly-{i:02d}-ab12", f"t{i}", 1.0, "b", "", "pass") for i in range(14)]
    trend_page.series_plot(Series(key, "lower", points), [], [], 0)
    (fig,) = drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)  # the constrained layout places the labels
    (ax,) = fig.axes
    page = fig.bbox
    for text in [ax.yaxis.label, ax.xaxis.label, *ax.get_xticklabels()]:
        if not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, text.get_text()
        assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, text.get_text()
