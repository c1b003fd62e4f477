"""history.md: the markdown a nightly job appends to its CI summary, on the campaign's real nights."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_llmbench.history.analysis import find_changes, new_findings
from pytest_llmbench.history.series import RATIO, Point, Series, SeriesKey, build_series, expand, read_nights
from pytest_llmbench.report import trend_summary

DATA = Path(__file__).parents[1] / "history" / "data"


def _render(upto: int, last: int) -> str:
    nights = read_nights(expand([str(DATA / f"night-{n:02d}") for n in range(1, upto + 1)]))
    series = build_series(nights)
    findings = find_changes(series)
    return trend_summary.render(series, nights, findings, new_findings(findings, nights, last), last)


def test_new_changes_for_the_worse_lead_the_summary() -> None:
    md = _render(15, 5)
    head, table = md.split("### New in the last 5 night(s)", 1)
    assert head.startswith("## llmbench history: ❌") and "15 nights (night-01 … night-15)" in head
    rows = [line for line in table.splitlines() if line.startswith("| **worse**")]
    assert rows and all("night-11" in r and "same build; server args" in r and "-t 1" in r for r in rows)


def test_old_changes_are_listed_but_not_new() -> None:
    md = _render(30, 2)
    assert md.startswith("## llmbench history: ✅ no new change point for the worse in the last 2 night(s)")
    assert "### New in" not in md and "### Earlier change points" in md
    assert "night-11" in md and "night-21" in md


def test_a_re_pin_is_listed_once_and_a_ratio_metric_is_named_as_one() -> None:
    key = SeriesKey("cpu-x", "c", "t.py::test[s]", "output_throughput", RATIO)
    refs = ["p1"] * 8 + ["p2"] * 8
    values = [1.0, 1.002, 0.998, 1.0, 1.001, 0.999, 1.0, 1.0, 0.9, 0.901, 0.899, 0.9, 0.85, 0.851, 0.849, 0.85]
    points = [
        Point(f"n{i:02d}", "", v, f"b{i}", "", None, reference=r)
        for i, (v, r) in enumerate(zip(values, refs, strict=True))
    ]
    tpot = Series(replace(key, metric="median_tpot_ms"), "lower", [replace(p, value=1 / p.value) for p in points])
    series = [Series(key, "higher", points), tpot]
    findings = find_changes(series)
    md = trend_summary.render(series, [], findings, [], 1)
    assert md.count("- c: n08 (p1 → p2)") == 1
    assert "| output_throughput / reference | n12 |" in md and "| median_tpot_ms / reference | n12 |" in md
