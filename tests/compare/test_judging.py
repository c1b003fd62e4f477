"""Which unit judges which metric (round for timing, prompt for accept length), the pilot's plan, and the
final test with the pilot's spread."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_llmbench.compare.judging import (
    Judge,
    compare_metric,
    family_of,
    per_round,
    source_of,
    unknown_size_name,
)
from pytest_llmbench.compare.power import Design
from pytest_llmbench.compare.rounds import Block, Rounds
from pytest_llmbench.workload.records import RequestRecord, SpecStats
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult

SC = Scenario("s", dataset="prompts", output_len=8, num_prompts=4, warmup=0)


def _block(r: int, role: str, ttfts: list[float], accept: list[float], tput: float = 100.0) -> Block:
    recs = [
        RequestRecord(index=i, ok=True, ttft_s=t, e2e_s=t + 1, completion_tokens=8, spec=SpecStats(accept_length=a))
        for i, (t, a) in enumerate(zip(ttfts, accept, strict=True))
    ]
    return Block(r, role, ScenarioResult(SC, recs, {"output_throughput": tput, "duration": 1.0, "failed": 0}))


def _rounds(n: int) -> Rounds:
    rounds = Rounds(SC)
    for r in range(n):
        shock = 1.0 + 0.3 * (r % 2)  # a whole block slower: the prompts of one round share it
        rounds.add(
            _block(r, "reference", [0.10 * shock, 0.20 * shock, 0.30 * shock, 0.40 * shock], [2.0, 2.5, 3.0, 3.5])
        )
        rounds.add(
            _block(r, "candidate", [0.11 * shock, 0.21 * shock, 0.32 * shock, 0.41 * shock], [1.9, 2.4, 3.1, 3.2])
        )
    return rounds


def test_timing_is_judged_per_round_and_accept_length_per_prompt():
    rounds = _rounds(3)
    ttft = compare_metric("median_ttft_ms", rounds, alpha=0.01)
    assert ttft is not None and ttft.n == 3 and "over 3 rounds (12 requests)" in ttft.method
    accept = compare_metric("accept_length", rounds, alpha=0.01)
    # the same 4 prompts in 3 rounds are 4 observations (greedy drafting repeats each value), not 12
    assert accept is not None and accept.n == 4 and accept.method == "paired t over 4 prompts (12 requests)"
    assert math.isclose(accept.estimate, (-0.1 - 0.1 + 0.1 - 0.3) / 4)


def test_one_round_of_timing_is_not_judged_yet():
    assert compare_metric("median_tpot_ms", _rounds(1), alpha=0.01) is None
    assert compare_metric("accept_length", _rounds(1), alpha=0.01).n == 4


def test_accept_length_pairs_by_the_scenario_prompt_when_windows_move():
    """Blocks of 2 prompts moving through 4: request index 0 is prompt 0 in round 0 and prompt 2 in round 1."""
    rounds = Rounds(SC)
    for r, ids in ((0, [0, 1]), (1, [2, 3]), (2, [0, 1])):
        for role, shift in (("reference", 0.0), ("candidate", -0.1)):
            accept = [2.0 + i + shift for i in ids]
            recs = [
                RequestRecord(
                    index=k, ok=True, ttft_s=0.1, e2e_s=1.0, completion_tokens=8, spec=SpecStats(accept_length=a)
                )
                for k, a in enumerate(accept)
            ]
            rounds.add(Block(r, role, ScenarioResult(SC, recs, {"output_throughput": 1.0}), ids))
    c = compare_metric("accept_length", rounds, alpha=0.01)
    assert c.n == 4 and c.method == "paired t over 4 prompts (6 requests)"


def _tput_rounds(n: int, sd: float, factor: float = 1.0, seed: int = 0) -> Rounds:
    rng = np.random.default_rng(seed)
    rounds = Rounds(SC)
    rounds.add(_block(-1, "reference", [0.1] * 4, [2.0] * 4, 50.0))  # a warm-up round: never judged
    rounds.add(_block(-1, "candidate", [0.1] * 4, [2.0] * 4, 500.0))
    for r in range(n):
        rounds.add(_block(r, "reference", [0.1] * 4, [2.0] * 4, 100.0))
        rounds.add(_block(r, "candidate", [0.1] * 4, [2.0] * 4, 100.0 * factor * float(np.exp(rng.normal(0, sd)))))
    return rounds


def test_warmup_rounds_are_never_judged():
    c = compare_metric("output_throughput", _tput_rounds(4, 0.01), alpha=0.01)
    assert c.n == 4 and 0.97 < c.estimate < 1.03  # the warm-up's ×10 is not in it


def test_judge_plans_from_the_pilot_and_tests_with_its_spread():
    judge = Judge(
        ("output_throughput", "accept_length"),
        {"timing": 0.01, "quality": 0.01},
        design=Design(pilot_units=8, budget_s=None),
    )
    pilot = _tput_rounds(8, 0.02)
    plan = judge.plan(pilot, seconds_per_round=1.0, elapsed_s=0.0)
    [need] = plan.needs  # accept length is judged per prompt: it does not plan rounds
    assert need.metric == "output_throughput" and need.spread.df == 7 and plan.rounds >= need.rounds > 8
    assert plan.rounds % 2 == 0 and plan.rounds - need.rounds <= 1  # whole ABBA pairs
    sd = float(
        np.std(
            np.log(
                [
                    b.result.metrics["output_throughput"] / 100.0
                    for b in pilot.blocks
                    if b.role == "candidate" and b.round >= 0
                ]
            ),
            ddof=1,
        )
    )
    assert need.spread.sd == pytest.approx(sd)
    more = _tput_rounds(plan.rounds, 0.02)  # the same pilot rounds (same seed), then more
    [tput, accept] = judge.judge(more, plan)
    # the verdict needs Stein's t (the pilot's 7 df), the t on the final SD (n - 1 df) and from 12 units the
    # serial-dependence-robust t (its Satterthwaite df, stats/ttest.py): the widest binds
    hac = "serial-dependence-robust SE binds" in tput.method
    assert (hac or tput.df in (7, plan.rounds - 1)) and tput.n == plan.rounds and "pilot of 8 rounds" in tput.method
    assert accept.metric == "accept_length" and accept.verdict == "equivalent"


def test_a_metric_that_did_not_plan_gets_its_own_pilot_spread():
    judge = Judge(("output_throughput",), {"timing": 0.01, "quality": 0.01}, design=Design(pilot_units=4))
    rounds = _tput_rounds(10, 0.02)
    plan = judge.plan(rounds.upto(4), seconds_per_round=1.0, elapsed_s=0.0)
    c = judge.compare("median_ttft_ms", rounds, plan)
    assert c.df == 3 and c.n == 10


def test_sources_and_families():
    assert source_of("output_throughput").per == "round"
    assert source_of("p99_itl_ms").per == "prompt" and not source_of("p99_itl_ms").higher_is_better
    assert source_of("bfcl_passed") is None
    assert family_of("accept_length") == "quality" and family_of("median_ttft_ms") == "timing"
    assert per_round("median_tpot_ms") and per_round("output_throughput") and not per_round("accept_length")


def _tail_rounds(n_rounds: int, per_block: int, tail_factor: float) -> Rounds:
    """Candidate as fast as the reference on every request but the slowest quarter, which is ``tail_factor``
    slower (a tail-only regression: a scheduler stall on long prompts)."""
    rng = np.random.default_rng(4)
    rounds = Rounds(SC)
    for r in range(n_rounds):
        base = np.sort(0.1 * np.exp(0.3 * rng.standard_normal(per_block)))
        cand = base.copy()
        cand[-max(1, per_block // 4) :] *= tail_factor
        for role, ttfts in (("reference", base), ("candidate", cand)):
            recs = [
                RequestRecord(index=i, ok=True, ttft_s=float(t), e2e_s=float(t) + 1, completion_tokens=8)
                for i, t in enumerate(ttfts)
            ]
            rounds.add(Block(r, role, ScenarioResult(SC, recs, {"output_throughput": 100.0, "duration": 1.0})))
    return rounds


def test_a_percentile_is_judged_as_the_per_unit_percentile_ratio():
    """Issue 37 finding 3: p90 was judged as the geometric mean of per-prompt ratios, so a tail-only
    regression (the slowest quarter 40% slower) read as ×1.09. Judged as each arm's p90 per unit, it is
    the ×1.4 it is; the median of the same rounds does not move."""
    rounds = _tail_rounds(6, 20, 1.4)
    p90 = compare_metric("p90_ttft_ms", rounds, alpha=0.01)
    assert p90 is not None and p90.verdict == "regressed" and p90.estimate == pytest.approx(1.4), p90
    assert p90.statistic.startswith("per-round p90 ratio") and "over 6 rounds (120 requests)" in p90.method
    median = compare_metric("median_ttft_ms", rounds, alpha=0.01)
    assert median is not None and median.estimate == pytest.approx(1.0) and median.verdict == "equivalent"
    mean = compare_metric("mean_ttft_ms", rounds, alpha=0.01)
    assert mean is not None and mean.statistic.startswith("per-round ratio of means")


def test_a_percentile_with_too_few_requests_per_unit_is_refused_with_how_to_get_more():
    rounds = _tail_rounds(6, 4, 1.4)
    with pytest.raises(ValueError, match=r"p99_ttft_ms is a percentile.*--llmbench-block-prompts"):
        compare_metric("p99_ttft_ms", rounds, alpha=0.01)
    assert compare_metric("median_ttft_ms", rounds, alpha=0.01) is not None  # 4 requests hold a median


def test_an_ini_size_for_a_latency_word_sets_every_summary_and_a_bad_name_is_named():
    """Issue 37 finding 8: ``ttft=10%`` passed validation and applied to nothing."""
    rounds = _tail_rounds(6, 20, 1.0)
    c = compare_metric("median_ttft_ms", rounds, alpha=0.01, detect={"ttft": "10%"})
    assert c is not None and c.detect == pytest.approx(0.10)
    assert unknown_size_name("ttft") is None and unknown_size_name("p99_itl_ms") is None
    assert unknown_size_name("bfcl_passed") is None  # a case metric: the user's own name
    for bad in ("ttft_ms", "p99_ttft", "throughput"):
        assert "is not a metric a comparison judges" in str(unknown_size_name(bad)), bad


def _latency_rounds(n_rounds: int, ref_gaps: list[list[float]], cand_gaps: list[list[float]]) -> Rounds:
    """Every round the same requests: each arm's token gaps per request (seconds), TTFT 0.1 s."""
    rounds = Rounds(SC)
    for r in range(n_rounds):
        for role, per_request in (("reference", ref_gaps), ("candidate", cand_gaps)):
            recs = []
            for i, gaps in enumerate(per_request):
                times = list(0.1 + np.concatenate([[0.0], np.cumsum(gaps)]))
                recs.append(
                    RequestRecord(
                        index=i,
                        ok=True,
                        ttft_s=0.1,
                        e2e_s=times[-1],
                        completion_tokens=len(times),
                        chunk_times=times,
                        chunk_tokens=[1] * len(times),
                    )
                )
            rounds.add(Block(r, role, ScenarioResult(SC, recs, {"output_throughput": 100.0, "duration": 1.0})))
    return rounds


def _merged_ratio(rounds: Rounds, metric: str) -> float:
    """candidate/reference of metrics.py's own value of ``metric`` over each arm's requests."""
    return rounds.merged("candidate").metrics[metric] / rounds.merged("reference").metrics[metric]


def test_a_mean_latency_is_judged_as_the_ratio_of_means_its_name_says():
    """Issue 55 finding 6: mean_* was judged as the geometric mean of per-request ratios, so 10% of
    requests running 2× slower (the mean ×1.10) read ×1.072. Judged as each arm's mean per unit, it is
    the ×1.10 that metrics.py's mean_tpot_ms moves by."""
    ref = [[0.01] * 8 for _ in range(20)]
    cand = [[0.02 if i < 2 else 0.01] * 8 for i in range(20)]  # 2 of 20 requests twice as slow
    rounds = _latency_rounds(6, ref, cand)
    mean = compare_metric("mean_tpot_ms", rounds, alpha=0.01)
    assert mean is not None and mean.statistic.startswith("per-round ratio of means")
    assert mean.estimate == pytest.approx(_merged_ratio(rounds, "mean_tpot_ms")) == pytest.approx(1.10), mean


def test_itl_is_judged_over_every_token_gap_as_metrics_py_computes_it():
    """Issue 55 finding 5: ITL percentiles were taken over each request's mean ITL, while the scenario's
    median_itl_ms is over every token gap. A candidate whose every request has 3 stalls of 50 ms among
    8 gaps of 10 ms has the same per-token median (×1.0) but a per-request mean ×2.5."""
    ref = [[0.01] * 8 for _ in range(4)]
    cand = [[0.05] * 3 + [0.01] * 5 for _ in range(4)]
    rounds = _latency_rounds(6, ref, cand)
    for metric in ("median_itl_ms", "p90_itl_ms", "mean_itl_ms"):
        c = compare_metric(metric, rounds, alpha=0.01)
        assert c is not None and "token gaps" in c.method and "over token gaps" in c.statistic, c
        assert c.estimate == pytest.approx(_merged_ratio(rounds, metric)), (metric, c)
    assert compare_metric("median_itl_ms", rounds, alpha=0.01).estimate == pytest.approx(1.0)


def _capacity_rounds(values: list[tuple[float, float]]) -> Rounds:
    """One capacity search per block: (reference, candidate) req/s; 0 = no rate passed, the lowest failed 0.25."""
    rounds = Rounds(SC)
    for r, pair in enumerate(values):
        for role, v in zip(("reference", "candidate"), pair, strict=True):
            m = {"capacity_rps": v, "capacity_failed_rps": 0.25 if v == 0 else v * 1.15}
            rounds.add(Block(r, role, ScenarioResult(SC, [], m)))
    return rounds


def test_a_capacity_below_the_search_floor_is_judged_at_it_not_a_crash():
    """A search that passed no rate (capacity 0, e.g. on a host that turned busy) made the session stop on
    "a ratio needs positive values"; it is judged at its lowest failed rate, an upper bound, and said."""
    a_a = _capacity_rounds([(4.2, 4.3), (0.0, 0.0), (4.8, 4.7), (4.5, 4.5), (4.1, 4.2)])
    c = compare_metric("capacity_rps", a_a, alpha=0.01)
    assert c is not None and c.verdict != "regressed" and c.n == 5
    assert "2 block(s) below the search's floor, judged at it" in c.method
    slow = _capacity_rounds([(4.2, 0.0), (4.4, 0.0), (4.6, 0.0), (4.3, 0.0), (4.5, 0.0)])
    c = compare_metric("capacity_rps", slow, alpha=0.01)
    assert c.verdict == "regressed" and c.ci_high < 0.06  # at most 0.25 against ~4.4 req/s
    assert "5 block(s)" in c.method
