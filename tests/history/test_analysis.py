"""Findings on the campaign's real nights (data/README.md): the -t 1 stretch (nights 11-20) is found where
it starts and where it ends, in the throughput, pointing at the server-args change with
the build unchanged, and nothing is found inside the unchanged stretches."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.history.analysis import args_diff, find_changes, new_findings, night_sd, repinned, segments
from pytest_llmbench.history.series import RATIO, Point, Series, SeriesKey, build_series, expand, read_nights

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


def _ratios(values: list[float], references: list[str], ses: list[float] | None = None) -> Series:
    key = SeriesKey("cpu-x", "c", "t.py::test[s]", "output_throughput", RATIO)
    ses = ses or [0.01] * len(values)
    points = [
        Point(f"n{i:02d}", f"t{i:02d}", v, f"b{i}", "", None, "equivalent", v, reference=r, se=se)
        for i, (v, r, se) in enumerate(zip(values, references, ses, strict=True))
    ]
    return Series(key, "higher", points)


def test_a_re_pinned_reference_starts_a_segment_not_a_change_point() -> None:
    """Re-pinning to a faster reference moves every ratio from ~1.00 to ~0.90 at once: the level is relative
    to the reference, so the re-pin is a segment boundary; a real 6% loss inside the new segment is found."""
    old = [1.00, 1.01, 0.99, 1.00, 1.01, 0.99, 1.00, 1.00]
    new = [0.90, 0.91, 0.89, 0.90, 0.91, 0.90, 0.89, 0.85, 0.84, 0.85, 0.84, 0.85, 0.85]
    s = _ratios(old + new, ["pin-1"] * len(old) + ["pin-2"] * len(new))
    assert repinned(s) == [8] and [len(seg) for seg in segments(s)] == [8, 13]
    [down] = find_changes([s])
    assert (down.first_after.night, down.last_before.night, down.worse) == ("n15", "n14", True)
    assert down.change.ratio == pytest.approx(0.85 / 0.90, abs=0.01)
    unsplit = _ratios(old + new, ["pin-1"] * (len(old) + len(new)))
    assert any(f.first_after.night == "n08" for f in find_changes([unsplit]))  # what the segment prevents


def test_weights_let_a_noisy_night_count_less() -> None:
    """Two nights of a busy hour read 0.94 and 1.06, and their comparisons said so (SE 6% against 0.3%):
    unweighted they widen the spread until a real 2% loss at n10 is not significant; weighted by 1/SE² they
    count for what their SE allows, and the loss is found at its night."""
    values = [1.0, 1.002, 0.998, 0.94, 1.001, 0.999, 1.06, 1.0, 1.002, 0.998, 0.98, 0.982, 0.978, 0.98, 0.981, 0.979]
    ses = [0.003] * len(values)
    ses[3] = ses[6] = 0.06
    s = _ratios(values, ["pin"] * len(values), ses)
    assert find_changes([s], weighted=False) == []
    [down] = find_changes([s], weighted=True)
    assert (down.first_after.night, down.worse) == ("n10", True)


def test_night_sd_is_the_spread_within_segments_not_the_step() -> None:
    """A 10% step with ±1% around each level: the SD the nights resolve with is ~1%, not the step's 5%."""
    values = [v * (1.01 if i % 2 else 0.99) for i, v in enumerate([100.0] * 10 + [90.0] * 10)]
    s = _series(values, ["pass"] * 20)
    findings = find_changes([s])
    assert [f.first_after.night for f in findings] == ["n10"]
    assert night_sd(s, findings) == pytest.approx(0.0105, abs=0.001)
    assert night_sd(s, []) > 0.04
