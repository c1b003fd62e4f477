"""history.md: the markdown a nightly job appends to its CI summary, on the campaign's real nights."""

from __future__ import annotations

from pathlib import Path

from pytest_llmbench.history.analysis import find_changes, new_findings
from pytest_llmbench.history.series import build_series, expand, read_nights
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
