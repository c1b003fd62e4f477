"""stats/verdicts.py: the one vocabulary, its two rules, and the three judges that speak it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_llmbench.compare.comparison import verdict_of
from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.evals.decisions.paired import PairedGap
from pytest_llmbench.gate.verdict import judge
from pytest_llmbench.stats.clustered import cluster_mean
from pytest_llmbench.stats.ttest import Intersection, iid_t
from pytest_llmbench.stats.verdicts import (
    DECISION_STATUS,
    GATE_STATUS,
    VERDICTS,
    Estimate,
    from_bounds,
    from_p,
)

BAND = (-0.03, 0.03)
WITHIN = (-0.05, 0.05)


@pytest.mark.parametrize(
    ("low", "high", "hib", "expected"),
    [
        (-0.10, -0.04, True, "regressed"),  # wholly below the band, higher is better
        (-0.10, -0.04, False, "improved"),  # the same interval when lower is better
        (0.04, 0.10, True, "improved"),
        (0.04, 0.10, False, "regressed"),
        (-0.04, 0.04, True, "equivalent"),  # inside ± detect, straddling the band
        (-0.06, 0.02, True, "inconclusive"),  # neither beyond the band nor inside ± detect
        (math.nan, 0.02, True, "inconclusive"),  # no bound: nothing decided
        (-0.10, -0.031, True, "regressed"),
    ],
)
def test_from_bounds_reads_the_band_and_the_equivalence_range(low, high, hib, expected):
    assert from_bounds(low, high, band=BAND, equivalent_within=WITHIN, higher_is_better=hib) == expected


def test_without_an_equivalence_range_nothing_is_equivalent():
    assert from_bounds(-0.01, 0.01, band=BAND, higher_is_better=True) == "inconclusive"
    assert from_p(0.5, 0.5, 0.01) == "inconclusive"
    assert from_p(0.001, 0.999, 0.01) == "regressed" and from_p(0.999, 0.001, 0.01) == "improved"


def test_every_dialect_names_every_verdict():
    assert set(GATE_STATUS) == set(DECISION_STATUS) == set(VERDICTS)
    assert GATE_STATUS["regressed"] == "REGRESSED" and DECISION_STATUS["regressed"] == "worse"


def test_the_tests_of_a_mean_change_are_estimates():
    d = np.array([0.01, -0.02, 0.03, 0.0, 0.02])
    t = iid_t(d)
    assert t is not None
    for est in (Intersection(float(d.mean()), [t]), cluster_mean(d, np.ones(5), resamples=99, seed=1)):
        assert isinstance(est, Estimate)
        low, high = est.bounds(0.05)
        assert low < est.estimate < high
        # the two rules agree: a one-sided bound past 0 at a level is a p below that level
        assert (from_p(est.p_below(0.0), est.p_above(0.0), 0.05) == "regressed") == (high < 0)


# The rules the three judges held before they were one (as they were written at 86d69ff), to show the
# adapters over stats/verdicts.py decide exactly as before on every input.
def _old_comparison(low, high, sizes, hib):
    if not (math.isfinite(low) and math.isfinite(high)):
        return "inconclusive"
    lo_i, hi_i = (1 - sizes.ignore, 1 + sizes.ignore)
    below, above = high < lo_i, low > hi_i
    if below or above:
        return "regressed" if below == hib else "improved"
    lo_d, hi_d = (1 - sizes.detect, 1 + sizes.detect)
    return "equivalent" if lo_d < low and high < hi_d else "inconclusive"


def _old_gate(baseline, observed, tolerance, direction):
    worse_by = baseline - observed if direction == "higher" else observed - baseline
    return "REGRESSED" if worse_by > tolerance else "improved" if -worse_by > tolerance else "pass"


def _old_decision(low, high, direction):
    if not np.isfinite(low) or not np.isfinite(high):
        return "same"
    bad = high < 0 if direction == "higher" else low > 0
    good = low > 0 if direction == "higher" else high < 0
    return "worse" if bad else "better" if good else "same"


def test_the_three_judges_decide_as_they_did_before_they_shared_the_rule():
    rng = np.random.default_rng(54)
    sizes = Sizes("ratio", 0.02, 0.05)
    for _ in range(4000):
        a, b = sorted(rng.normal(1.0, 0.05, 2))
        hib = bool(rng.integers(2))
        assert verdict_of(a, b, sizes=sizes, higher_is_better=hib) == _old_comparison(a, b, sizes, hib)
        base, obs, tol = rng.normal(10, 1), rng.normal(10, 1), abs(rng.normal(0, 1))
        direction = "higher" if hib else "lower"
        assert judge(base, obs, tol, direction) == _old_gate(base, obs, tol, direction)
        low, high = a - 1.0, b - 1.0
        gap = PairedGap("correct", direction, (low + high) / 2, low, high, 0.95, 10, 10)
        assert gap.status == _old_decision(low, high, direction)
    assert verdict_of(math.nan, 1.0, sizes=sizes, higher_is_better=True) == "inconclusive"
    assert judge(1.0, 0.5, math.nan, "higher") == "pass"  # a NaN tolerance decides nothing, as before
