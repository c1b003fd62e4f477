"""Comparisons counted up front from a test's source: every literal serving ``bench.check``."""

from __future__ import annotations

import pytest_llmbench
from pytest_llmbench.compare.cases import compared_family as _compared_family
from pytest_llmbench.compare.count import comparisons_by_family, literal_checks
from pytest_llmbench.gate.noise.paired import McNemar, PairedBootstrap


def three_timing_checks(llm_server, bench):  # the shape of benches/test_serving_cpu.py
    m = bench.run(None).metrics
    bench.check("output_throughput", m["output_throughput"])
    bench.check("median_ttft_ms", m["median_ttft_ms"])
    bench.check(metric="median_tpot_ms", observed=m["median_tpot_ms"])
    if m.get("spec"):
        bench.check("accept_length", [1.0])
    bench.check("answers_right", 5.0)  # a baseline check, not a comparison


def checks_in_a_variable(llm_server, bench):
    for name in ("output_throughput", "median_tpot_ms"):
        bench.check(name, 1.0)


def test_every_literal_serving_check_counts_in_its_family():
    names = literal_checks(three_timing_checks)
    assert sorted(names or []) == sorted(
        ["output_throughput", "median_ttft_ms", "median_tpot_ms", "accept_length", "answers_right"]
    )
    counted = comparisons_by_family(three_timing_checks, family_of=_compared_family, fallback=())
    assert counted == {"timing": 3, "quality": 1}  # three timing comparisons, where two were counted


def test_a_check_without_a_literal_name_falls_back_to_the_deciding_metrics():
    assert literal_checks(checks_in_a_variable) is None
    counted = comparisons_by_family(
        checks_in_a_variable, family_of=_compared_family, fallback=("output_throughput", "median_tpot_ms")
    )
    assert counted == {"timing": 2}
    assert comparisons_by_family(None, family_of=_compared_family, fallback=("accept_length",)) == {"quality": 1}


def per_case_checks(llm_server, bench):  # the shape of a quality bench run on both arms (bench.arms())
    ref, cand = bench.arms()
    bench.check("bfcl_passed", cand.passed, reference_cases=ref.passed, noise=McNemar())
    bench.check("gsm8k_passed", cand.gsm8k, reference_cases=ref.gsm8k, noise=pytest_llmbench.McNemar())
    bench.check("decisions_correct", cand.correct, reference_cases=ref.correct, noise=PairedBootstrap(cluster="/"))
    bench.check("judge_score", cand.score, reference_cases=ref.score, family="timing")
    bench.check("output_throughput", 1.0)


def test_every_per_case_comparison_is_counted_up_front():
    """Issue 55 finding 2: a ``reference_cases=`` check was never counted, so each was judged at its
    family's whole alpha (k of them: false failures up to k·alpha). Each now counts in the family
    check_cases judges it in."""
    counted = comparisons_by_family(per_case_checks, family_of=_compared_family, fallback=())
    assert counted == {"quality": 2, "decisions": 1, "timing": 2}
    assert literal_checks(per_case_checks) == ["output_throughput"]
