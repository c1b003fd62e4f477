"""stats/ttest.py: the t tests of a mean of per-unit differences, the HAC guard, and the rule over them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.stats.ttest import (
    HAC_MIN_UNITS,
    Intersection,
    TTest,
    bartlett_form,
    hac_lags,
    hac_t,
    iid_t,
)


@pytest.mark.parametrize("n", [12, 30, 200])
def test_the_hac_form_is_unbiased_for_independent_units_and_blind_to_the_mean(n):
    """xᵀFx estimates the units' variance: tr(F) = 1 makes it unbiased under independence (E = σ²·tr(F)),
    and F·1 = 0 makes it ignore the mean (the change being judged)."""
    form, df = bartlett_form(n, hac_lags(n))
    assert np.trace(form) == pytest.approx(1.0)
    assert np.abs(form @ np.ones(n)).max() < 1e-12
    assert 1 < df < n - 1  # a noisier estimate than the SD: fewer df than the t's


def test_with_no_lags_the_hac_t_is_the_paired_t():
    """Zero lags leave the plain SD: the form is M/(n−1) and the df n − 1."""
    n = 20
    form, df = bartlett_form(n, 0)
    d = np.random.default_rng(3).normal(0, 1, n)
    assert float(d @ form @ d) == pytest.approx(np.var(d, ddof=1)) and df == pytest.approx(n - 1)


def test_a_slow_drift_widens_the_hac_se_and_alternation_does_not():
    """Units that drift together (positive autocorrelation) carry less information than their SD says;
    units that alternate carry more. The HAC SE follows; the iid SE cannot tell them apart."""
    n = 40
    drift = np.sin(np.arange(n) * 2 * np.pi / n)  # slow: neighbours alike
    alternate = np.where(np.arange(n) % 2 == 0, np.abs(drift), -np.abs(drift))
    slow, own = hac_t(drift), iid_t(drift)
    fast, fast_own = hac_t(alternate), iid_t(alternate)
    assert slow is not None and own is not None and fast is not None and fast_own is not None
    assert slow.se > 1.5 * own.se
    assert fast.se < fast_own.se


def test_below_its_floor_there_is_no_hac_t():
    assert hac_t(np.arange(HAC_MIN_UNITS - 1, dtype=float)) is None
    assert hac_t(np.arange(HAC_MIN_UNITS, dtype=float)) is not None


def test_the_intersection_takes_the_widest_bound_and_the_largest_p():
    """Adding a test can only widen the interval and raise the p (it must reject as well)."""
    narrow, wide = TTest(0.01, 30.0), TTest(0.012, 8.0)
    one, both = Intersection(-0.04, [narrow]), Intersection(-0.04, [narrow, wide])
    assert both.bounds(0.01)[1] == pytest.approx(-0.04 + stats.t.isf(0.01, 8) * 0.012)
    assert both.bounds(0.01)[0] < one.bounds(0.01)[0] and both.bounds(0.01)[1] > one.bounds(0.01)[1]
    assert both.p_below(-0.01) == pytest.approx(stats.t.cdf(-0.03 / 0.012, 8))
    assert both.p_below(-0.01) > one.p_below(-0.01)
    assert both.binding(0.01) is wide


def test_the_paired_t_matches_scipy():
    d = np.random.default_rng(8).normal(0.3, 1.0, 15)
    t = iid_t(d)
    assert t is not None
    assert t.p_below(float(d.mean()), 0.0) == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="less").pvalue)
    assert t.p_above(float(d.mean()), 0.0) == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)


def test_the_hac_guard_keeps_independent_units_at_their_level():
    """Seeded, small: over independent normal units the HAC t alone rejects a true mean at alpha 10% about
    10% of the time (its form is unbiased there and its df are the Satterthwaite df), so the guard costs
    power, not level."""
    rng = np.random.default_rng(55)
    rejected = 0
    reps = 2000
    for _ in range(reps):
        d = rng.normal(0.0, 1.0, 30)
        t = hac_t(d)
        assert t is not None
        rejected += t.p_below(float(d.mean()), 0.0) < 0.10
    ci = stats.binomtest(rejected, reps).proportion_ci(0.999)
    assert ci.low - 0.01 < 0.10 < ci.high + 0.01, rejected / reps
