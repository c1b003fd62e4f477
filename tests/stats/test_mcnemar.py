"""stats/mcnemar.py: the exact McNemar pieces the gate and the comparisons share."""

from __future__ import annotations

import pytest
from scipy import stats

from pytest_llmbench.stats.mcnemar import clopper_pearson, discordant_p, pass_rate_gap, smallest_alpha


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (7, 205), (100, 205)])
def test_clopper_pearson_is_scipys_exact_interval(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.98, method="exact")
    assert clopper_pearson(k, n, 0.01) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.mark.parametrize(("lost", "won"), [(0, 0), (9, 1), (5, 5), (1, 12), (30, 14)])
def test_the_gate_and_the_comparison_run_one_mcnemar_test(lost, won):
    """The gate's p (binomial tail on the discordant cases) and the comparison's unboxed bound (θ's exact
    upper bound below ½) are the same test: the bound rejects at alpha exactly where p < alpha."""
    n = lost + won + 40
    p = discordant_p(lost, lost + won)
    for alpha in (0.001, 0.01, 0.05, 0.2):
        assert (pass_rate_gap(lost, won, n, alpha, boxed=False)[1] < 0) == (p < alpha), (alpha, p)


def test_smallest_alpha_inverts_a_monotone_rejection():
    assert smallest_alpha(lambda a: a > 0.0123) == pytest.approx(0.0123, rel=1e-5)
    assert smallest_alpha(lambda a: False) == 1.0
