"""The detectors as pure functions: steps found where they are, with the interval of their ratio; noise and
constants left alone; the thresholds (p, magnitude, Perfherder's forward window) doing what they say."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_llmbench.history.changepoints import edivisive, log_values, perfherder


def _series(n: int, sd: float, seed: int, steps: dict[int, float] | None = None) -> np.ndarray:
    logs = np.random.default_rng(seed).normal(0.0, sd, n)
    for at, ratio in (steps or {}).items():
        logs[at:] += math.log(ratio)
    return 100.0 * np.exp(logs)


def test_a_step_is_found_where_it_is_with_its_ratio() -> None:
    [cp] = edivisive(_series(40, 0.01, 1, {25: 0.9}))
    assert cp.index == 25 and (cp.n_before, cp.n_after) == (25, 15)
    assert cp.ratio_low < 0.9 < cp.ratio_high and cp.ratio_high < 0.95
    assert cp.change_pct == pytest.approx((cp.after / cp.before - 1) * 100)
    assert cp.p < 1e-10


def test_a_step_and_its_revert_are_two_change_points() -> None:
    points = edivisive(_series(36, 0.05, 2, {12: 0.7, 24: 1 / 0.7}))
    assert [p.index for p in points] == [12, 24]
    assert points[0].ratio < 0.8 and points[1].ratio > 1.25


@pytest.mark.parametrize("seed", range(5))
def test_noise_alone_has_no_change_point(seed: int) -> None:
    assert edivisive(_series(60, 0.04, 100 + seed)) == []
    assert perfherder(_series(60, 0.04, 100 + seed)) == []


def test_constant_series_has_none_and_a_clean_step_is_exact() -> None:
    assert edivisive([5.0] * 20) == []
    [cp] = edivisive([5.0] * 10 + [4.0] * 10)
    assert cp.index == 10 and cp.ratio == pytest.approx(0.8) and cp.p == 0.0


def test_min_magnitude_drops_a_real_but_small_change() -> None:
    values = _series(60, 0.002, 3, {30: 0.99})
    assert [p.index for p in edivisive(values)] == [30]
    assert edivisive(values, min_magnitude=0.02) == []


def test_perfherder_needs_its_forward_window() -> None:
    values = _series(60, 0.01, 4, {30: 0.9})
    assert [p.index for p in perfherder(values)] == [30]
    assert perfherder(values[:35]) == []  # 5 nights after: Perfherder cannot see it yet
    assert [p.index for p in edivisive(values[:35])] == [30]


def test_values_off_the_ratio_scale_are_refused_by_position() -> None:
    with pytest.raises(ValueError, match=r"point 2 is 0\.0"):
        log_values([1.0, 2.0, 0.0])
    with pytest.raises(ValueError, match="point 0 is nan"):
        edivisive([float("nan"), 1.0, 1.0, 1.0])
