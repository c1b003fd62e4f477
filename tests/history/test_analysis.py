"""Findings on the campaign's real nights (data/README.md): the -t 1 stretch (nights 11-20) is found where
it starts and where it ends, in the throughput, pointing at the server-args change with
the build unchanged, and nothing is found inside the unchanged stretches."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.history.analysis import args_diff, find_changes, new_findings
from pytest_llmbench.history.series import Point, Series, SeriesKey, build_series, expand, read_nights

DATA = Path(__file__).parent / "data"
SLOW_FIRST, FAST_AGAIN = "night-11", "night-21"


@pytest.fixture(scope="module")
def nights():
    return read_nights(expand([str(DATA / "night-*")]))


@pytest.fixture(scope="module")
def findings(nights):
    return find_changes(build_series(nights))


def test_the_slow_stretch_is_found_at_both_ends(findings) -> None:
    found = [
        f for f in findings if f.series.key.metric == "output_throughput" and f.series.key.test.endswith("[chat-1u]")
    ]
    assert [f.first_after.night for f in found] == [SLOW_FIRST, FAST_AGAIN]
    down, up = found
    assert down.worse and not up.worse
    assert down.change.ratio_high < 0.9 and up.change.ratio_low > 1.1
    assert down.last_before.night == "night-10" and up.last_before.night == "night-20"
    assert down.good_build == down.bad_build and down.setup_changed  # a setting, not a build: no bisect
    assert "-t 2" in down.last_before.setup and "-t 1" in down.first_after.setup


def test_nothing_is_found_inside_the_unchanged_stretches(findings) -> None:
    stray = [
        (f.series.key.metric, f.series.key.test, f.first_after.night)
        for f in findings
        if f.first_after.night not in (SLOW_FIRST, FAST_AGAIN)
    ]
    assert stray == []


def test_new_means_the_first_night_after_is_recent(nights, findings) -> None:
    assert new_findings(findings, nights, last=1) == []
    upto = [n for n in nights if n.name <= "night-15"]
    early = find_changes(build_series(upto))
    recent = new_findings(early, upto, last=5)  # nights 11-15: 5 nights after the step
    assert recent and all(f.first_after.night == SLOW_FIRST and f.worse for f in recent)
    assert new_findings(early, upto, last=0) == []


def test_a_finding_is_a_plain_record(findings) -> None:
    record = findings[0].as_record()
    assert record["record"] == "change_point"
    assert record["good_build"] == record["bad_build"] and record["setup_before"] != record["setup_after"]
    assert record["ci_low"] <= record["ratio"] <= record["ci_high"]


def test_args_diff_names_only_what_changed() -> None:
    assert args_diff(["-c", "16", "-t", "2", "--jinja"], ["-c", "16", "-t", "1", "--jinja"]) == "-t 2 → -t 1"
    assert args_diff(["-t", "2"], ["-t", "2", "--top-k", "0"]) == "(none) → --top-k 0"
    assert args_diff(["-t", "2"], ["-t", "2"]) == ""


def _series(values: list[float], statuses: list[str]) -> Series:
    key = SeriesKey("cpu-x", "c", "t.py::test[s]", "output_throughput")
    points = [
        Point(f"n{i:02d}", f"t{i:02d}", v, "b", "", s) for i, (v, s) in enumerate(zip(values, statuses, strict=True))
    ]
    return Series(key, "higher", points)


def test_nights_the_gate_called_not_comparable_are_left_out() -> None:
    """A busy host's night (a quarter of the speed) neither makes a change point nor ends a segment."""
    values = [100.0, 101, 99, 100, 25, 30, 100, 99, 101, 100, 60, 61, 59, 60, 60, 61]
    statuses = ["pass"] * 16
    statuses[4] = statuses[5] = "not comparable"
    [down] = find_changes([_series(values, statuses)])
    assert (down.first_after.night, down.last_before.night, down.worse) == ("n10", "n09", True)
    statuses[9] = "not comparable"
    [down] = find_changes([_series(values, statuses)])
    assert (down.first_after.night, down.last_before.night) == ("n10", "n08")
