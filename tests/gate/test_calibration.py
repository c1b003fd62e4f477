"""Machine calibration: the score, the comparability rule."""

from __future__ import annotations

import pytest

from pytest_llmbench.gate.calibration import TOLERANCE, comparable, measure


def test_measure_gives_a_positive_finite_score():
    # how much it scatters is measured, not asserted: benches/perf/calibration_states.out.md
    score = measure(repeats=3)
    assert 0 < score < float("inf")


@pytest.mark.parametrize(("recorded", "now", "ok"), [
    (10.0, 10.0, True), (10.0, 12.4, True), (10.0, 8.1, True),
    (10.0, 27.0, False),  # the fresh machine that ran the CPU suite 2.7x faster
    (10.0, 5.0, False),   # a busy neighbour on a shared core
    (None, 5.0, True),    # recorded before calibration existed: judged as before
])
def test_comparable(recorded, now, ok):
    assert comparable(recorded, now)[0] is ok
    assert TOLERANCE == 0.25
