"""Noise models: tolerance, one-sided verdicts by direction, rule text, serialisation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.gate.noise import (
    NOISE_MODELS,
    Binomial,
    History,
    NoiseModelError,
    Relative,
    Spread,
    StdErr,
    noise_from_dict,
)
from pytest_llmbench.gate.types import BaselineEntry, Observation


def entry(value, direction="higher", **kw):
    return BaselineEntry(value=value, direction=direction, noise={"name": "Relative", "frac": 0.1}, **kw)


@pytest.mark.parametrize(
    "model",
    [
        StdErr(k=2.5, alpha=None),
        Relative(0.04),
        Spread(8.0),
        Binomial(0.05),
        History(k=2.0, min_runs=4, fallback=Spread(3.0)),
    ],
)
def test_round_trip_through_baseline_dict(model):
    assert noise_from_dict(model.to_dict()) == model
    assert model.to_dict()["name"] in NOISE_MODELS


def test_unknown_noise_model_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown noise model 'Bogus'.*StdErr"):
        noise_from_dict({"name": "Bogus"})
    with pytest.raises(ValueError, match="bad parameters for noise model Relative"):
        noise_from_dict({"name": "Relative", "fraction": 0.1})


def test_stderr_rule_and_tolerance_match_the_formula():
    v = StdErr(k=2).verdict(entry(3.28, se=0.05), Observation(2.91, se=0.06), "higher")
    assert v.tolerance == pytest.approx(2 * math.hypot(0.05, 0.06))
    assert v.status == "REGRESSED"
    assert v.rule == "StdErr k=2: fail if observed < 3.28 − 2·√(0.05²+0.06²) = 3.124"


def test_stderr_from_per_sample_values_uses_the_standard_error():
    rng = np.random.default_rng(1)
    values = rng.normal(3.4, 0.9, 32)
    obs = Observation.of(values)
    assert obs.se == pytest.approx(stats.sem(values)) and obs.n == 32
    v = StdErr().verdict(entry(3.4, se=obs.se, n=32), obs, "higher")
    assert v.status == "pass"


def test_stderr_alpha_uses_welch_t_quantile():
    v = StdErr(alpha=0.01).verdict(entry(10.0, se=1.0, n=5), Observation(10.0, se=1.0, n=5), "higher")
    # equal SEs and n: Welch df = 2·(n-1) = 8
    assert v.tolerance == pytest.approx(stats.t.ppf(0.99, 8) * math.sqrt(2))
    assert "df=8.0" in v.rule


def test_stderr_without_any_se_is_a_usage_error():
    with pytest.raises(NoiseModelError, match="per-sample values"):
        StdErr().verdict(entry(1.0), Observation(1.0), "higher")


def test_stderr_missing_baseline_se_is_the_observed_one_scaled_by_sample_sizes():
    # changed with issue 10: the borrowed SE is scaled by √(n_observed / n_baseline), not copied
    v = StdErr(k=1).verdict(entry(1.0), Observation(1.0, se=0.1, n=32), "higher")
    assert v.tolerance == pytest.approx(math.hypot(0.1 * math.sqrt(32), 0.1))
    assert "baseline SE unknown" in v.rule and "√(32/1)" in v.rule


def test_stderr_single_value_against_a_32_prompt_baseline_has_the_spread_of_one_prompt():
    """Defect at 8fab55e: the baseline's SE of a 32-prompt mean was used for one value (31% false alarms)."""
    base = BaselineEntry(3.4, "higher", {"name": "StdErr"}, n=32, se=0.9 / math.sqrt(32))
    v = StdErr(k=2).verdict(base, Observation(3.4 - 1.0), "higher")  # one prompt 1.1 SD below the mean
    assert v.status == "pass"
    assert v.tolerance == pytest.approx(2 * math.hypot(0.9 / math.sqrt(32), 0.9), rel=1e-6)


def test_stderr_without_n_to_scale_by_is_an_error_not_a_guess():
    with pytest.raises(NoiseModelError, match="no n to scale"):
        StdErr().verdict(entry(1.0), Observation(1.0, se=0.1), "higher")


@pytest.mark.parametrize(
    ("direction", "observed", "status"),
    [
        ("higher", 95.0, "REGRESSED"),
        ("higher", 97.0, "pass"),
        ("higher", 105.0, "improved"),
        ("lower", 105.0, "REGRESSED"),
        ("lower", 103.0, "pass"),
        ("lower", 95.0, "improved"),
    ],
)
def test_relative_is_one_sided_by_direction(direction, observed, status):
    v = Relative(0.04).verdict(entry(100.0, direction), Observation(observed), direction)
    assert v.status == status
    assert v.tolerance == pytest.approx(4.0)
    op = "<" if direction == "higher" else ">"
    assert f"Relative 4%: fail if observed {op} 100" in v.rule


def test_spread_boundary_is_inclusive_of_the_spread():
    m = Spread(8)
    assert m.verdict(entry(176), Observation(168), "higher").status == "pass"
    assert m.verdict(entry(176), Observation(167), "higher").status == "REGRESSED"
    assert m.verdict(entry(176), Observation(185), "higher").status == "improved"
    assert m.verdict(entry(176), Observation(160), "higher").rule == "Spread 8: fail if observed < 176 − 8 = 168"


def test_binomial_critical_count_agrees_with_fisher_exact():
    m = Binomial(alpha=0.01)
    base = entry(176, n=205)
    v = m.verdict(base, Observation(170, n=205), "higher")
    crit = int(v.rule.rsplit("≤ ", 1)[1].split()[0])
    p = lambda k: stats.fisher_exact([[176, 29], [k, 205 - k]], alternative="greater").pvalue  # noqa: E731
    assert p(crit) < 0.01 <= p(crit + 1)
    assert m.verdict(base, Observation(crit, n=205), "higher").status == "REGRESSED"
    assert m.verdict(base, Observation(crit + 1, n=205), "higher").status == "pass"
    assert v.tolerance == pytest.approx(176 - (crit + 1))


def test_binomial_lower_is_better_counts_failures():
    m = Binomial(alpha=0.01)
    base = entry(2, "lower", n=200)
    v = m.verdict(base, Observation(20, n=200), "lower")
    assert v.status == "REGRESSED" and "fail if observed ≥" in v.rule
    assert m.verdict(base, Observation(3, n=200), "lower").status == "pass"


def test_binomial_needs_n_and_whole_counts():
    with pytest.raises(NoiseModelError, match="pass n="):
        Binomial().verdict(entry(176, n=205), Observation(170), "higher")
    with pytest.raises(NoiseModelError, match="whole count"):
        Binomial().verdict(entry(176, n=205), Observation(170.5, n=205), "higher")


def test_binomial_too_few_cases_says_it_cannot_fail():
    v = Binomial(alpha=0.001).verdict(entry(3, n=4), Observation(0, n=4), "higher")
    assert v.status == "pass" and "too few cases" in v.rule


def test_history_learns_the_spread_from_the_seeds_bfcl_reruns():
    base = entry(176, n=205, history=(168.0, 174.0, 176.0))
    v = History(k=2, min_runs=3).verdict(base, Observation(150), "higher")
    hist = np.array([168, 174, 176])
    # changed with issue 10: a t prediction bound (2 df) at the level k=2 stands for, not 2·s
    tol = stats.t.ppf(stats.norm.cdf(2), 2) * np.std(hist, ddof=1) * np.sqrt(1 + 1 / 3)
    assert v.baseline == pytest.approx(hist.mean())
    assert v.tolerance == pytest.approx(tol)
    assert v.status == "REGRESSED"
    assert v.p_value == pytest.approx(stats.t.sf((hist.mean() - 150) / (np.std(hist, ddof=1) * np.sqrt(4 / 3)), 2))
    assert History(k=2, min_runs=3).verdict(base, Observation(160), "higher").status == "pass"


def test_history_false_alarm_rate_is_its_level_at_three_runs_not_five_percent():
    """Defect at 8fab55e: k=3 times s from 3 runs false-alarmed ~5%; the t bound holds its level."""
    rng = np.random.default_rng(0)
    runs = rng.normal(100, 2, size=(4000, 4))
    model = History(k=2, min_runs=3, fallback=Spread(0))
    flags = sum(
        model.verdict(entry(r[2], history=tuple(r[:3])), Observation(r[3]), "higher").status == "REGRESSED"
        for r in runs
    )
    assert flags / 4000 == pytest.approx(stats.norm.sf(2), abs=0.01)  # 2.3%, vs 9% with a fixed 2·s


def test_history_that_never_moved_uses_the_fallback_not_a_zero_tolerance():
    """Defect at 8fab55e: [0,0,0] failed on 1 (tolerance 0) while [0,0] passed on the fallback."""
    model = History(k=3, min_runs=3, fallback=Spread(2))
    for hist in ((0.0, 0.0), (0.0, 0.0, 0.0)):
        v = model.verdict(entry(0.0, "lower", history=hist), Observation(1.0), "lower")
        assert v.status == "pass" and "fallback Spread 2" in v.rule
    assert (
        "no spread to learn" in model.verdict(entry(0.0, "lower", history=(0.0,) * 3), Observation(1.0), "lower").rule
    )


def test_history_with_too_few_runs_uses_the_fallback_and_says_so():
    base = entry(176, history=(176.0, 174.0))
    v = History(min_runs=3, fallback=Spread(8)).verdict(base, Observation(160), "higher")
    assert v.status == "REGRESSED"
    assert v.rule.startswith("History: 2 of 3 runs recorded, fallback Spread 8")
    assert v.noise.startswith("History(")


def test_history_without_a_fallback_is_learning_until_its_minimum_of_starts():
    """Issue 21: a fixed fallback band failed 3 of 7 unchanged GPU reruns; until min_runs starts are
    recorded the check is shown as learning (k of N) and never fails, however far the value moved."""
    model = History(k=3)
    assert model.min_runs == 6 and model.fallback is None
    hist = (190.0, 196.0, 172.0)
    v = model.verdict(entry(172.0, history=hist), Observation(100.0), "higher")
    assert v.status == "learning" and v.tolerance is None and v.p_value is None
    assert v.baseline == pytest.approx(np.mean(hist)) and "3 of 6 runs recorded" in v.rule
    assert not model.learned(hist) and model.learned(hist * 2)
    judged = model.verdict(entry(172.0, history=hist * 2), Observation(100.0), "higher")
    assert judged.status == "REGRESSED"
    assert History(k=3, fallback=Spread(2)).learned(hist) is False  # a fallback judges; it has not learned


def test_history_nested_fallback_survives_the_baseline_file():
    m = noise_from_dict({"name": "History", "k": 2, "min_runs": 5, "fallback": {"name": "Spread", "spread": 3}})
    assert m == History(k=2, min_runs=5, fallback=Spread(3))
