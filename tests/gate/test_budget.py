"""The error budget: alpha specs, Holm's adjustment, the per-test threshold."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_llmbench.gate.budget import DEFAULT_ALPHA, Budget, holm, parse_alpha


def test_default_budget_is_five_percent_for_the_suite():
    alphas = parse_alpha(None)
    assert alphas == parse_alpha(DEFAULT_ALPHA)
    assert sum(alphas.values()) == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("0.05", {"timing": 0.05, "quality": 0.05, "decisions": 0.05}),
        ("timing=0.1, quality=0.01,decisions=0.02", {"timing": 0.1, "quality": 0.01, "decisions": 0.02}),
        ("off", None),
        ("OFF", None),
    ],
)
def test_alpha_specs(spec, expected):
    assert parse_alpha(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("speed=0.1,quality=0.1,decisions=0.1", "unknown family 'speed'"),
        ("timing=0.1", "no alpha for decisions, quality"),
        ("1.5", "between 0 and 1"),
        ("abc", "--gate-alpha 'abc'"),
    ],
)
def test_bad_alpha_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_alpha(spec)


def test_holm_matches_its_definition():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 → 4·0.005=0.02, 3·0.01=0.03, 2·0.03=0.06, max(0.06, 1·0.04)=0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == []
    assert holm([0.6, 0.7]) == [1.0, 1.0]


def test_holm_controls_family_wise_error_under_the_null():
    rng = np.random.default_rng(1)
    any_flag = np.mean([min(holm(rng.uniform(size=30))) <= 0.05 for _ in range(4000)])
    assert any_flag <= 0.05 + 0.01


def test_per_test_threshold_is_bonferroni_over_gates_counted_up_front():
    b = Budget(parse_alpha("0.04"), counts={"timing": 8, "quality": 0, "decisions": 2})
    assert b.threshold("timing") == pytest.approx(0.005)
    assert b.threshold("quality") == pytest.approx(0.04)  # nothing counted: the whole alpha
    assert "timing α=0.04/8 gates" in b.describe()


def test_comparisons_counted_in_the_session_share_the_per_test_level():
    """Issue 54: a family with stored checks and comparisons spent its alpha twice (each counted apart). One
    budget: the per-test level is alpha over the gates and the comparisons counted up front."""
    b = Budget({"timing": 0.02, "quality": 0.02, "decisions": 0.01}, counts={"quality": 2}, compared={"quality": 2})
    assert b.threshold("quality") == pytest.approx(0.005)
    assert b.threshold("timing") == pytest.approx(0.02)  # nothing counted: one test's whole alpha
    assert "quality α=0.02/2 gates + 2 comparisons" in b.describe()


def test_holm_runs_once_over_every_source_of_a_family():
    b = Budget({"timing": 0.05, "quality": 0.05, "decisions": 0.05})
    b.sources["gate"] = lambda: {"quality": [0.01, 0.03]}
    b.sources["comparisons"] = lambda: {"quality": [0.03], "timing": [0.001]}
    # the comparison alone: q = 0.03 ≤ 0.05; in one pass with the family's two stored checks: q = 0.06
    assert holm([0.03]) == [0.03]
    assert b.joint_q("quality", "comparisons", [0.03]) == pytest.approx([0.06])
    assert b.joint_q("quality", "gate", [0.01, 0.03]) == pytest.approx(holm([0.01, 0.03, 0.03])[:2])
    assert b.joint_q("timing", "gate", []) == []
    assert b.joint_q("timing", "comparisons", [0.001]) == pytest.approx([0.001])  # no stored timing check
