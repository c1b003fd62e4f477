"""Which unit judges which metric (round for timing, prompt for accept length) and when the rounds stop."""

from __future__ import annotations

import math
from dataclasses import replace

from pytest_llmbench.compare.interleave import Block, Rounds
from pytest_llmbench.compare.judging import FamilyPlans, compare_metric, family_of, source_of
from pytest_llmbench.workload.records import RequestRecord, SpecStats
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult

from .test_sequential import C

SC = Scenario("s", dataset="prompts", output_len=8, num_prompts=4, warmup=0)


def _block(r: int, role: str, ttfts: list[float], accept: list[float]) -> Block:
    recs = [RequestRecord(index=i, ok=True, ttft_s=t, e2e_s=t + 1, completion_tokens=8,
                          spec=SpecStats(accept_length=a))
            for i, (t, a) in enumerate(zip(ttfts, accept))]
    return Block(r, role, ScenarioResult(SC, recs, {"output_throughput": 100.0, "duration": 1.0, "failed": 0}))


def _rounds(n: int) -> Rounds:
    rounds = Rounds(SC)
    for r in range(n):
        shock = 1.0 + 0.3 * (r % 2)  # a whole block slower: the prompts of one round share it
        rounds.add(_block(r, "reference", [0.10 * shock, 0.20 * shock, 0.30 * shock, 0.40 * shock],
                          [2.0, 2.5, 3.0, 3.5]))
        rounds.add(_block(r, "candidate", [0.11 * shock, 0.21 * shock, 0.32 * shock, 0.41 * shock],
                          [1.9, 2.4, 3.1, 3.2]))
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


def test_sources_and_families():
    assert source_of("output_throughput").per == "round"
    assert source_of("p99_itl_ms").per == "prompt" and not source_of("p99_itl_ms").higher_is_better
    assert source_of("bfcl_passed") is None
    assert family_of("accept_length") == "quality" and family_of("median_ttft_ms") == "timing"


def test_family_plans_stop_on_futile_comparisons_too():
    plans = FamilyPlans({"timing": 0.01, "quality": 0.01}, max_looks=20, min_looks=2)
    hopeless = replace(C, estimate=1.0, se=0.06 / math.sqrt(5), n=5)  # cannot reach ±3% by 20 rounds
    decided = replace(C, metric="accept_length", kind="difference", verdict="equivalent")
    assert plans.stop(5, [hopeless, decided])
    hopeful = replace(C, estimate=0.90, se=0.06 / math.sqrt(5), n=5)  # a 10% drop is within reach
    assert not plans.stop(5, [hopeful, decided])
    assert not plans.stop(1, [decided])  # before min_looks
    assert plans.stop(20, [hopeful])  # the last look
