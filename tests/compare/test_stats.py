"""Reference vs candidate per metric: estimates, 95% intervals, p-values against ignore, verdicts, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.stats import (
    MIN_DF,
    TOO_FEW,
    VERDICTS,
    Comparison,
    Spread,
    compare_decisions,
    compare_paired,
    compare_pass_fail,
    compare_rounds,
    detectable_change,
    unit_quantiles,
    verdict_of,
)

RNG = np.random.default_rng(12)
TPUT = Sizes("ratio", 0.01, 0.03)
LAT = Sizes("ratio", 0.02, 0.05)
ACCEPT = Sizes("difference", 0.03, 0.1)


def pts(ignore: float, detect: float) -> Sizes:
    return Sizes("difference", ignore, detect)


def rounds(n: int, factor: float, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = 200 * np.exp(rng.normal(0, 0.05, n))  # round-to-round level moves; the pairing cancels it
    return ref, ref * factor * np.exp(rng.normal(0, noise, n))


@pytest.mark.parametrize(
    ("kind", "low", "high", "higher", "expected"),
    [
        ("ratio", 0.95, 0.985, True, "regressed"),  # wholly worse than ignore (1%), though smaller than detect
        ("ratio", 0.95, 0.985, False, "improved"),
        ("ratio", 1.02, 1.10, True, "improved"),
        ("ratio", 0.975, 1.02, True, "equivalent"),  # inside ± detect (3%)
        ("ratio", 0.96, 1.02, True, "inconclusive"),  # the lower end crosses detect
        ("ratio", 0.97, 0.995, True, "inconclusive"),  # worse, but not beyond ignore as a whole
        ("difference", -0.5, -0.2, True, "regressed"),
        ("difference", 0.2, 0.5, False, "regressed"),
        ("difference", -0.05, 0.05, True, "equivalent"),
        ("difference", float("nan"), 0.0, True, "inconclusive"),
    ],
)
def test_verdict_of_bounds_against_ignore_and_detect(kind, low, high, higher, expected):
    sizes = TPUT if kind == "ratio" else ACCEPT
    assert verdict_of(low, high, sizes=sizes, higher_is_better=higher) == expected
    assert expected in VERDICTS


def test_rounds_is_a_t_test_on_log_ratios_with_the_95_interval():
    ref, cand = rounds(8, 0.95, 0.02)
    c = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.001)
    d = np.log(cand / ref)
    half = stats.t.ppf(0.975, d.size - 1) * stats.sem(d)
    assert c.estimate == pytest.approx(math.exp(d.mean()))
    assert (c.ci_low, c.ci_high) == pytest.approx((math.exp(d.mean() - half), math.exp(d.mean() + half)))
    p = stats.ttest_1samp(d, math.log(0.99), alternative="less").pvalue
    assert c.p_value == pytest.approx(p)  # against "no worse than ignore", not against 0 or detect
    assert c.reference == pytest.approx(stats.gmean(ref)) and c.candidate == pytest.approx(stats.gmean(cand))
    assert (c.kind, c.n, c.df, c.method) == ("ratio", 8, 7, "log-ratio t over 8 rounds")
    assert c.as_record()["confidence"] == 0.95 and c.alpha == 0.001


def test_a_tiny_alpha_never_widens_the_printed_interval():
    ref, cand = rounds(6, 0.97, 0.02, seed=2)
    loose = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01)
    tight = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=1e-8)
    assert (loose.ci_low, loose.ci_high) == (tight.ci_low, tight.ci_high)
    assert loose.p_value == tight.p_value and tight.detectable > loose.detectable


def test_a_ten_percent_drop_regresses_and_an_unchanged_build_is_equivalent():
    ref, cand = rounds(8, 0.90, 0.01)
    worse = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01)
    assert worse.verdict == "regressed" and worse.p_value < 0.01 and worse.ci_high < 0.99
    ref, cand = rounds(8, 1.0, 0.005, seed=1)
    same = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01)
    assert same.verdict == "equivalent" and 0.97 < same.ci_low < 1 < same.ci_high < 1.03
    assert same.p_value > 0.5 and same.p_equivalent < 0.01
    assert same.rules_out == pytest.approx(1 - same.ci_low)  # "rules out a slowdown > 1.x%"


@pytest.mark.parametrize("seed", range(20))
def test_p_value_and_verdict_agree(seed):
    """regressed exactly when the one-sided p against ignore is at most alpha: one test, two readings."""
    ref, cand = rounds(6, 0.97, 0.02, seed=seed)
    c = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01)
    assert (c.verdict == "regressed") == (c.p_value <= 0.01)
    assert (c.verdict == "equivalent") == (c.p_equivalent <= 0.01 and c.p_value > 0.01)


def test_stein_uses_the_pilot_spread_and_its_degrees_of_freedom():
    ref, cand = rounds(30, 0.97, 0.02, seed=3)
    pilot = Spread(0.05, 7)  # a pilot that saw more spread than the later rounds
    c = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01, spread=pilot)
    d = np.log(cand / ref)
    se = 0.05 / math.sqrt(30)
    assert c.se == pytest.approx(se) and c.df == 7
    assert c.p_value == pytest.approx(stats.t.cdf((d.mean() - math.log(0.99)) / se, 7))
    half = stats.t.isf(0.025, 7) * se
    assert c.ci_low == pytest.approx(math.exp(d.mean() - half))
    assert "(spread: the wider of a pilot of 8 rounds and the final SD)" in c.method


def _units_with_a_bad_minute(n: int = 30, slow_unit: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """An unchanged-but-1.5%-slower candidate over quiet units, and one unit after the pilot in which the
    candidate's blocks ran 1.7× slower (a neighbour took the GPU for a minute)."""
    rng = np.random.default_rng(5)
    d = math.log(0.985) + 0.005 * rng.standard_normal(n)
    d[slow_unit] += math.log(1 / 1.7)
    ref = np.full(n, 200.0)
    return ref, ref * np.exp(d)


def test_an_outlier_unit_after_the_pilot_widens_the_final_test():
    """Issue 37 finding 1: the pilot's SD alone let one bad unit after it move the mean 1.8% and call a
    change inside ignore "regressed". The final SD sees that unit, and the verdict needs both tests."""
    ref, cand = _units_with_a_bad_minute()
    pilot = Spread(0.02, 11)  # the 12 quiet pilot units
    c = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01, spread=pilot)
    d = np.log(cand / ref)
    stein_high = d.mean() + stats.t.isf(0.01, 11) * 0.02 / math.sqrt(d.size)
    assert stein_high < math.log(0.99)  # Stein alone (issue 20's test) says regressed
    assert c.verdict != "regressed" and c.p_value > 0.01
    final_se = np.std(d, ddof=1) / math.sqrt(d.size)
    assert c.se >= 0.99 * final_se and c.df != 11  # a test over all units binds (the final SD's or the HAC t)
    assert c.ci_low <= math.exp(d.mean() - stats.t.isf(0.025, d.size - 1) * final_se) + 1e-12


def test_quiet_units_after_a_noisy_pilot_keep_steins_test():
    """The final SD can widen the interval, never narrow it: a pilot that saw more spread still binds."""
    ref, cand = rounds(30, 0.97, 0.01, seed=3)
    c = compare_rounds(
        "output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01, spread=Spread(0.04, 11)
    )
    assert c.se == pytest.approx(0.04 / math.sqrt(30)) and c.df == 11


@pytest.mark.parametrize("n", [2, 3])
def test_nothing_is_decided_below_the_floor_of_degrees_of_freedom(n):
    """Issue 37 finding 2: 2 units said "regressed" at df 1. Below MIN_DF the interval is printed, the
    verdict is inconclusive, and the method says why."""
    ref, cand = rounds(n, 0.80, 0.001)
    c = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01)
    assert c.verdict == "inconclusive" and c.p_value == 1.0 and c.p_equivalent == 1.0
    assert f"budget too small to judge: {n} units ({n - 1} df, {MIN_DF} needed)" in c.method
    assert c.ci_high < 0.9  # the estimate and its interval are still reported
    pilot = Spread(0.01, 2)  # a pilot of 3 units cannot carry a decision over more units either
    more = rounds(10, 0.80, 0.001)
    c = compare_rounds("output_throughput", *more, higher_is_better=True, sizes=TPUT, alpha=0.01, spread=pilot)
    assert c.verdict == "inconclusive" and "budget too small to judge: 10 units (2 df" in c.method


def test_the_floor_is_reached_at_min_df():
    ref, cand = rounds(MIN_DF + 1, 0.80, 0.001)
    c = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01)
    assert c.verdict == "regressed" and c.df == MIN_DF


def test_every_comparison_names_its_statistic():
    ref, cand = rounds(8, 0.97, 0.01)
    c = compare_rounds(
        "output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01, unit="server pairs"
    )
    assert c.statistic.endswith("geometric mean over server pairs") and c.as_record()["statistic"] == c.statistic
    lat = compare_paired("mean_ttft_ms", ref, cand, higher_is_better=False, sizes=LAT, alpha=0.01)
    assert lat.statistic == "geometric mean of per-request ratios"


def test_unit_quantiles_take_each_arms_quantile_per_unit_and_refuse_too_few_requests():
    ref = [1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]
    cand = [1.0, 2.0, 3.0, 8.0, 10.0, 20.0, 30.0, 80.0]
    units = [0, 0, 0, 0, 1, 1, 1, 1]
    r, c = unit_quantiles("median_ttft_ms", ref, cand, units, 0.5)
    assert r == [2.5, 25.0] and c == [2.5, 25.0]  # a tail-only change leaves the medians alone
    with pytest.raises(ValueError, match=r"p99_ttft_ms is a percentile.*>= 100 requests per arm.*has 4"):
        unit_quantiles("p99_ttft_ms", ref, cand, units, 0.99)


def test_detectable_change_is_ignore_plus_the_reach_of_the_test():
    se, df = 0.01, 9
    reach = stats.t.isf(0.01, df) + stats.t.isf(0.05, df)
    got = detectable_change(se, df, sizes=TPUT, alpha=0.01, higher_is_better=True)
    assert got == pytest.approx(1 - math.exp(math.log(0.99) - reach * se))
    assert detectable_change(se, df, sizes=LAT, alpha=0.01, higher_is_better=False) == pytest.approx(
        math.exp(math.log(1.02) + reach * se) - 1
    )
    assert detectable_change(float("nan"), df, sizes=TPUT, alpha=0.01, higher_is_better=True) == math.inf


def test_lower_is_better_ratio_regresses_when_slower():
    ref, cand = rounds(10, 1.12, 0.01)
    c = compare_paired("median_ttft_ms", ref, cand, higher_is_better=False, sizes=LAT, alpha=0.01)
    assert c.verdict == "regressed" and c.ci_low > 1.05 and c.p_value < 0.01
    assert c.method == "paired log-ratio t over 10 prompts"
    assert c.rules_out == pytest.approx(c.ci_high - 1)


def test_identical_arms_are_equivalent_with_a_point_interval():
    values = [3.1, 2.8, 4.0, 3.3]
    c = compare_paired("accept_length", values, values, higher_is_better=True, sizes=ACCEPT, alpha=0.01)
    assert (c.estimate, c.ci_low, c.ci_high, c.verdict, c.p_value) == (0.0, 0.0, 0.0, "equivalent", 1.0)
    assert c.rules_out == 0.0


def test_accept_length_difference_is_paired_per_prompt():
    rng = np.random.default_rng(3)
    ref = rng.normal(3.4, 0.9, 64)  # prompts differ a lot; the same prompt on both arms differs little
    cand = ref - 0.3 + rng.normal(0, 0.1, 64)
    c = compare_paired("accept_length", ref, cand, higher_is_better=True, sizes=ACCEPT, alpha=0.01)
    assert c.kind == "difference" and c.verdict == "regressed"
    assert c.estimate == pytest.approx(-0.3, abs=0.05)
    unpaired = stats.ttest_ind(cand, ref).pvalue
    assert unpaired > 0.01  # the unpaired test would not see it: the pairing is what resolves 0.3


def test_as_record_has_the_results_fields():
    ref, cand = rounds(5, 0.9, 0.01)
    rec = compare_rounds("output_throughput", ref, cand, higher_is_better=True, sizes=TPUT, alpha=0.01).as_record()
    assert {
        "metric",
        "reference",
        "candidate",
        "ratio",
        "ci_low",
        "ci_high",
        "verdict",
        "p_value",
        "n",
        "method",
        "ignore",
        "detect",
        "rules_out",
        "detectable",
        "alpha",
        "p_equivalent",
    } <= set(rec)
    rec = compare_paired(
        "accept_length", [1.0, 2.0], [1.5, 2.0], higher_is_better=True, sizes=ACCEPT, alpha=0.01
    ).as_record()
    assert "difference" in rec and "ratio" not in rec


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: compare_rounds("output_throughput", [1, 2], [1], higher_is_better=True, sizes=TPUT, alpha=0.01),
            "output_throughput: reference and candidate must be paired",
        ),
        (
            lambda: compare_rounds("output_throughput", [1, 0], [1, 2], higher_is_better=True, sizes=TPUT, alpha=0.01),
            "output_throughput: a ratio needs positive values",
        ),
        (
            lambda: compare_paired("tpot", [1, float("nan")], [1, 2], higher_is_better=False, sizes=LAT, alpha=0.01),
            "tpot: values must be finite",
        ),
        (
            lambda: compare_rounds("output_throughput", [1, 2], [1, 2], higher_is_better=True, sizes=TPUT, alpha=0.7),
            "output_throughput: alpha must be in",
        ),
        (lambda: Sizes("ratio", 0.03, 0.01), "need 0 <= ignore < detect"),
        (lambda: Sizes("ratio", 0.01, 1.5), "a ratio's detect must be < 100%"),
        (
            lambda: compare_pass_fail("bfcl_passed", [1, 2], [1, 0], sizes=pts(0.01, 0.03), alpha=0.01),
            "bfcl_passed: pass/fail values must be booleans",
        ),
    ],
)
def test_bad_input_names_the_metric(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()


def test_mcnemar_with_ignore_zero_is_the_exact_one_sided_test():
    ref = np.array([True] * 30 + [False] * 10 + [True] * 9 + [False] * 1)
    cand = np.array([True] * 30 + [False] * 10 + [False] * 9 + [True] * 1)  # 9 lost, 1 won
    c = compare_pass_fail("bfcl_passed", ref, cand, sizes=pts(0.0, 0.03), alpha=0.05)
    p = stats.binomtest(9, 10, 0.5, alternative="greater").pvalue  # 0.0107
    assert c.p_value == pytest.approx(p, rel=1e-4)
    assert c.estimate == pytest.approx(-8 / 50) and c.verdict == "regressed"
    assert compare_pass_fail("bfcl_passed", ref, cand, sizes=pts(0.0, 0.03), alpha=0.01).verdict == "inconclusive"
    assert c.method == "exact McNemar on 50 cases (9 lost, 1 won)"


def test_mcnemar_ignore_moves_the_null():
    ref = np.array([True] * 150 + [True] * 12 + [False] * 2 + [False] * 36)
    cand = np.array([True] * 150 + [False] * 12 + [True] * 2 + [False] * 36)
    ps = [
        compare_pass_fail("pass", ref, cand, sizes=pts(m, 0.1), alpha=0.01).p_value
        for m in (0.0, 0.01, 0.03, 0.06, 0.08)
    ]
    assert ps == sorted(ps) and ps[0] < 0.01 < ps[-1]
    assert ps[-1] == 1.0  # 14 discordant of 200 cases move the pass rate 7 points at most: 8 is impossible


def test_mcnemar_agreeing_arms_bound_the_unseen_disagreement():
    """205 cases with no disagreement still leave up to 2.6% disagreeing cases plausible (at alpha/2):
    equivalent within 3 points, not within 2."""
    ref = RNG.random(205) < 0.8
    same2 = compare_pass_fail("bfcl_passed", ref, ref, sizes=pts(0.01, 0.02), alpha=0.01)
    assert same2.estimate == 0.0 and same2.verdict == "inconclusive"
    same3 = compare_pass_fail("bfcl_passed", ref, ref, sizes=pts(0.01, 0.03), alpha=0.01)
    assert same3.verdict == "equivalent" and same3.p_equivalent <= 0.01
    assert same3.ci_low == pytest.approx(-(1 - 0.0125 ** (1 / 205))) == -same3.ci_high  # 95%: alpha/2 each
    cand = ref.copy()
    cand[:20] = ~cand[:20]
    c = compare_pass_fail("bfcl_passed", ref, cand, sizes=pts(0.01, 0.02), alpha=0.01)
    assert c.ci_low <= c.estimate <= c.ci_high and c.verdict == "inconclusive"


def test_mcnemar_p_value_and_verdict_agree():
    ref = np.array([True] * 160 + [True] * 30 + [False] * 5 + [False] * 10)
    cand = np.array([True] * 160 + [False] * 30 + [True] * 5 + [False] * 10)
    for ignore in (0.0, 0.02, 0.05):
        c = compare_pass_fail("bfcl_passed", ref, cand, sizes=pts(ignore, 0.1), alpha=0.01)
        assert (c.verdict == "regressed") == (c.p_value <= 0.01), ignore


def test_decisions_bootstrap_is_seeded_and_consistent():
    rng = np.random.default_rng(4)
    ref = (rng.random(300) < 0.8).astype(float)
    cand = ref.copy()
    cand[rng.choice(300, 40, replace=False)] = 0.0  # up to 40 answers lost
    a = compare_decisions("correct", ref, cand, higher_is_better=True, sizes=pts(0.01, 0.03), alpha=0.01, seed=1)
    b = compare_decisions("correct", ref, cand, higher_is_better=True, sizes=pts(0.01, 0.03), alpha=0.01, seed=1)
    assert a == b
    assert a.verdict == "regressed" and a.ci_high < -0.01 and a.p_value <= 0.01
    assert a.ci_low <= a.estimate <= a.ci_high and a.detectable < 0.1


def test_decisions_at_an_alpha_the_bootstrap_cannot_resolve_are_not_judged():
    ref = np.zeros(100)
    cand = np.r_[np.full(50, -1.0), np.zeros(50)]
    c = compare_decisions("correct", ref, cand, higher_is_better=True, sizes=pts(0.01, 0.03), alpha=1e-5)
    assert c.verdict == "inconclusive" and "not judged" in c.method
    assert c.ci_low < c.estimate < c.ci_high  # the 95% interval is still there to read


def test_comparison_decided():
    base = dict(
        metric="m",
        kind="ratio",
        reference=1.0,
        candidate=1.0,
        estimate=1.0,
        ci_low=0.9,
        ci_high=1.1,
        ignore=0.01,
        detect=0.03,
        higher_is_better=True,
        p_value=0.5,
        n=4,
        method="x",
    )
    assert not Comparison(verdict="inconclusive", **base).decided
    assert Comparison(verdict="equivalent", **base).decided


def test_rounds_make_the_round_the_unit_of_a_per_prompt_comparison():
    """Per-prompt TPOT whose blocks carry a shared shock: the t over prompts sees the shock as a
    regression, the t over per-round means does not."""
    rng = np.random.default_rng(5)
    rounds_, prompts = 4, 32
    shock = np.repeat(rng.normal(0, 0.04, rounds_), prompts) + 0.06  # the blocks happened to be slower
    ref = 10 * np.exp(rng.normal(0, 0.3, rounds_ * prompts))
    cand = ref * np.exp(shock + rng.normal(0, 0.02, rounds_ * prompts))
    labels = np.repeat(np.arange(rounds_), prompts)
    per_prompt = compare_paired("median_tpot_ms", ref, cand, higher_is_better=False, sizes=LAT, alpha=0.01)
    per_round = compare_paired(
        "median_tpot_ms", ref, cand, higher_is_better=False, sizes=LAT, alpha=0.01, rounds=labels
    )
    assert per_prompt.n == 128 and per_round.n == 4
    assert per_round.method == "paired log-ratio t over 4 rounds (128 requests)"
    assert per_round.estimate == pytest.approx(per_prompt.estimate)  # equal rounds: the same mean
    means = np.log(cand / ref).reshape(rounds_, prompts).mean(axis=1)
    assert per_round.se == pytest.approx(stats.sem(means))
    assert per_round.ci_high - per_round.ci_low > 5 * (per_prompt.ci_high - per_prompt.ci_low)


def test_round_labels_must_match_the_prompts():
    with pytest.raises(ValueError, match="median_tpot_ms: 3 round labels for 4 values"):
        compare_paired(
            "median_tpot_ms",
            [1, 2, 3, 4],
            [1, 2, 3, 4],
            higher_is_better=False,
            sizes=LAT,
            alpha=0.01,
            rounds=[0, 0, 1],
        )


def test_decisions_resample_clusters_whole():
    """Ten cases of 20 questions each, every question of a case moving together: 200 questions are only
    ten observations, so the cluster interval is far wider than the one that treats questions as free."""
    rng = np.random.default_rng(0)
    case_shift = np.repeat(rng.normal(0, 0.3, 40), 5)
    ref = np.full(200, 0.5)
    cand = ref + case_shift
    labels = np.repeat([f"case{i}" for i in range(40)], 5)
    free = compare_decisions("accuracy", ref, cand, higher_is_better=True, sizes=pts(0.01, 0.03), alpha=0.025)
    whole = compare_decisions(
        "accuracy", ref, cand, higher_is_better=True, sizes=pts(0.01, 0.03), alpha=0.025, clusters=labels
    )
    assert whole.estimate == pytest.approx(free.estimate)
    assert (whole.ci_high - whole.ci_low) > 1.5 * (free.ci_high - free.ci_low)
    assert whole.method == "paired studentized bootstrap (9999 resamples) over 200 questions in 40 clusters"
    one = compare_decisions(
        "accuracy", ref, cand, higher_is_better=True, sizes=pts(0.01, 0.03), alpha=0.025, clusters=["c"] * 200
    )
    assert one.verdict == "inconclusive" and TOO_FEW in one.method


def test_few_questions_are_judged_by_a_t_not_a_liberal_percentile_bootstrap():
    """Issue 55 finding 3: over 5 questions the percentile bootstrap read 4 lost answers of 5 as regressed
    at alpha 0.5% (p 0.0004: 4⁵ of 5⁵ resamples lose every draw), where the paired t's p is 0.008; at
    exactly ignore it called 5.1% regressed at alpha 1%. Below 30 clusters it is now a t on clusters,
    and below 4 nothing is judged."""
    ref, cand = np.ones(5), np.array([0.0, 0.0, 0.0, 0.0, 1.0])
    c = compare_decisions("correct", ref, cand, higher_is_better=True, sizes=pts(0.01, 0.03), alpha=0.005)
    assert c.p_value == 1.0 and c.verdict == "inconclusive", c
    assert "too few units for a bootstrap on skewed data" in c.method
    three = compare_decisions("correct", ref[:3], cand[:3], higher_is_better=True, sizes=pts(0.01, 0.03), alpha=0.05)
    assert three.verdict == "inconclusive" and TOO_FEW in three.method


def test_units_that_drift_together_are_flagged_and_their_interval_widened():
    """Issue 55 finding 7: a slowly drifting arm ratio (units not independent) passed unchecked, so the t
    read its drift as 24 independent units. The lag-1 autocorrelation now flags it and widens the
    interval; the same units in a shuffled order are not flagged."""
    rng = np.random.default_rng(7)
    drift = 0.01 * np.sin(np.arange(24) * 2 * np.pi / 24) + rng.normal(0, 0.002, 24)
    ref = np.full(24, 100.0)
    walked = compare_rounds(
        "output_throughput", ref, 100 * np.exp(drift), higher_is_better=True, sizes=TPUT, alpha=0.01
    )
    shuffled = compare_rounds(
        "output_throughput", ref, 100 * np.exp(rng.permutation(drift)), higher_is_better=True, sizes=TPUT, alpha=0.01
    )
    assert "units not independent" in walked.method and "units not independent" not in shuffled.method
    assert (walked.ci_high - walked.ci_low) > 1.5 * (shuffled.ci_high - shuffled.ci_low)


def _drifting_ratio(seed: int, n: int = 30) -> np.ndarray:
    """Issue 55's drifting-ratio model at exactly ignore: 2% unit noise plus AR(1) φ 0.7, SD 0.5%."""
    rng = np.random.default_rng(seed)
    w = np.empty(n)
    w[0] = 0.005 * rng.standard_normal()
    for u in range(1, n):
        w[u] = 0.7 * w[u - 1] + 0.005 * math.sqrt(1 - 0.49) * rng.standard_normal()
    return math.log(0.99) + 0.02 * rng.standard_normal(n) + w


@pytest.mark.parametrize("seed", [1748, 5617])
def test_a_drift_the_lag1_check_cannot_see_is_not_called_regressed(seed):
    """Issue 55 finding 7: a candidate exactly at ignore whose ratio drifted slowly over 30 units was called
    regressed (p 0.0017 and 0.0014 at alpha 1%) by Stein's and the final-SD t, and the lag-1 check does not
    flag it (its lag-1 correlation is within what independent units show). The HAC t, which the verdict
    must also pass, allows for the dependence: not regressed."""
    d = _drifting_ratio(seed)
    spread = Spread(float(np.std(d[:12], ddof=1)), 11)  # the pilot's 12 units
    ref = np.full(d.size, 100.0)
    c = compare_rounds(
        "output_throughput", ref, ref * np.exp(d), higher_is_better=True, sizes=TPUT, alpha=0.01, spread=spread
    )
    assert "units not independent" not in c.method
    assert c.verdict != "regressed" and c.p_value > 0.01, c
    assert "serial-dependence-robust SE binds" in c.method


def test_a_pilot_hands_steins_test_its_own_sd_whatever_test_binds():
    """A pilot's spread was read from its comparison's ``se`` and ``df``, which are the binding test's: where a
    dependence guard bound (the lag-1 widening, the HAC t), Stein's test got the guard's SE and its few df,
    and the plan grew (the audit's mean units went from ~30 to ~76 at 2% unit SD). ``spread`` is the units'
    own SD and n − 1 df."""
    rng = np.random.default_rng(7)
    drift = 0.01 * np.sin(np.arange(24) * 2 * np.pi / 24) + rng.normal(0, 0.002, 24)
    ref = np.full(24, 100.0)
    c = compare_rounds("output_throughput", ref, 100 * np.exp(drift), higher_is_better=True, sizes=TPUT, alpha=0.01)
    assert c.df < 23  # a guard binds
    assert c.spread == Spread(pytest.approx(float(np.std(drift, ddof=1))), 23)


def test_a_low_percentile_needs_its_lower_tail_too():
    """Issue 55 finding 7: only the upper tail was guarded, so a p10 of 5 requests per unit (the unit's
    minimum, not its 10th percentile) was judged. It now needs 10 per unit, as a p90 does."""
    units = np.repeat(np.arange(4), 5)
    values = np.linspace(1.0, 2.0, 20)
    with pytest.raises(ValueError, match=r"p10_ttft_ms is a percentile.*needs >= 10"):
        unit_quantiles("p10_ttft_ms", values, values, units, 0.1)
