"""Paired bootstrap over cases on synthetic paired answers with a known gap."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_llmbench.datasets.decision_schema import Decision
from pytest_llmbench.evals.decisions.paired import PairedGap, changed_answers, paired_bootstrap, paired_gap

GOLD = (1.0, 0.0)


def answers(right: np.ndarray, per_case: np.ndarray, conf: float = 0.8) -> list[Decision]:
    """One yes/no decision per entry of ``right`` (gold is yes), grouped into cases of ``per_case`` sizes."""
    out, i = [], 0
    for c, size in enumerate(per_case):
        for j in range(size):
            p = (conf, 1 - conf) if right[i] else (1 - conf, conf)
            out.append(Decision(f"c{c}", f"q{j}", "noul", "g", ("yes", "no"), p, GOLD))
            i += 1
    return out


def test_known_gap_is_found_and_its_interval_covers_it():
    rng = np.random.default_rng(0)
    per_case = rng.integers(1, 9, 500)
    n = per_case.sum()
    ref = rng.random(n) < 0.65
    cand = ref | (rng.random(n) < 0.3)  # candidate fixes ~30% of the reference's misses: gap ≈ 0.105
    gap = paired_gap(answers(cand, per_case), answers(ref, per_case), "correct", names=("swift", "stock"))
    assert gap.gap == pytest.approx(cand.mean() - ref.mean())
    assert gap.low < 0.35 * 0.3 < gap.high
    assert gap.low > 0 and gap.status == "better" and not gap.worse
    assert gap.n_cases == 500 and gap.n_decisions == n
    assert "swift − stock" in gap.describe()


def test_no_gap_interval_contains_zero():
    rng = np.random.default_rng(1)
    per_case = rng.integers(1, 6, 300)
    n = per_case.sum()
    a, b = rng.random(n) < 0.7, rng.random(n) < 0.7
    gap = paired_gap(answers(a, per_case), answers(b, per_case), "correct")
    assert gap.low < 0 < gap.high and gap.status == "same"


def test_lower_is_better_metric_flags_worse():
    rng = np.random.default_rng(2)
    per_case = np.full(200, 3)
    right = rng.random(600) < 0.7
    sure, unsure = answers(right, per_case, conf=0.95), answers(right, per_case, conf=0.7)
    # same answers, but more confident when wrong: log loss is worse for the candidate
    gap = paired_gap(sure, unsure, "log_loss")
    assert gap.direction == "lower" and gap.low > 0 and gap.worse


def test_cases_are_resampled_whole():
    # Decisions of a case move together (all right or all wrong): resampling cases must give a wider
    # interval than pretending the decisions were independent.
    rng = np.random.default_rng(3)
    cases = 200
    diff_case = rng.choice([-1.0, 0.0, 1.0], cases) * 8  # 8 decisions per case, same sign
    count = np.full(cases, 8.0)
    _, lo_c, hi_c = paired_bootstrap(diff_case, count)
    per_decision = np.repeat(diff_case / 8, 8)
    _, lo_d, hi_d = paired_bootstrap(per_decision, np.ones(cases * 8))
    assert (hi_c - lo_c) > 2 * (hi_d - lo_d)


def test_fixed_seed_is_reproducible_and_degenerate_cases_do_not_crash():
    d, c = np.array([1.0, -2.0, 0.5, 3.0]), np.array([2.0, 2.0, 1.0, 3.0])
    assert paired_bootstrap(d, c) == paired_bootstrap(d, c)
    assert paired_bootstrap(np.zeros(5), np.ones(5)) == (0.0, 0.0, 0.0)
    gap, lo, hi = paired_bootstrap(np.array([1.0]), np.array([1.0]))
    assert gap == 1.0 and np.isnan(lo) and np.isnan(hi)


def test_gate_fails_only_on_the_bad_side():
    mk = lambda lo, hi, direction="higher": PairedGap("m", direction, (lo + hi) / 2, lo, hi, 0.95, 10, 10)  # noqa: E731
    assert mk(-0.3, -0.1).worse and not mk(-0.3, 0.1).worse and not mk(0.1, 0.3).worse
    assert mk(0.1, 0.3, "lower").worse and not mk(-0.3, -0.1, "lower").worse
    assert mk(float("nan"), float("nan")).status == "same"


def test_unanswered_pairs_are_left_out_of_probability_metrics():
    a = answers(np.array([True, True, False]), np.array([3]))
    b = answers(np.array([True, False, False]), np.array([3]))
    b[0] = Decision("c0", "q0", "noul", "g", ("yes", "no"), None, GOLD, ok=False, reason="x")
    assert paired_gap(a, b, "log_loss").n_decisions == 2
    assert paired_gap(a, b, "correct").n_decisions == 3  # a failure counts as wrong
    assert changed_answers(a, b) == 1


def test_bootstrap_p_agrees_with_the_interval_and_the_per_question_gate():
    """Issue 10: the paired decisions gate is a bench.check verdict (PairedBootstrap over the baseline's
    per-question sidecar), clustered by case like the interval, with about the same p."""
    from pytest_llmbench.evals.decisions.paired import CASE_SEP, gate_cases
    from pytest_llmbench.gate import PairedBootstrap
    from pytest_llmbench.gate.types import BaselineEntry, Observation

    rng = np.random.default_rng(3)
    per_case = rng.integers(1, 9, size=30)  # a verdict needs 30 clusters (issue 55)
    ref = rng.uniform(size=per_case.sum()) < 0.8
    worse = ref & (rng.uniform(size=ref.size) > 0.3)  # drops 30% of the right answers
    gap = paired_gap(answers(worse, per_case), answers(ref, per_case), "correct")
    assert gap.worse and gap.p_value < 0.025
    base = gate_cases(answers(ref, per_case))
    entry = BaselineEntry(float(np.mean(list(base.values()))), "higher", {}, cases=base)
    model = PairedBootstrap(alpha=0.01, cluster=CASE_SEP)
    v = model.verdict(entry, Observation.of(cases=gate_cases(answers(worse, per_case))), "higher")
    assert v.status == "REGRESSED" and v.paired and "in 30 clusters" in v.rule
    assert v.p_value == pytest.approx(gap.p_value, abs=0.01)
    same = model.verdict(entry, Observation.of(cases=base), "higher")
    assert (
        same.status == "pass"
        and same.p_value == 1.0
        and paired_gap(answers(ref, per_case), answers(ref, per_case)).p_value == 1.0
    )


def test_gate_cases_key_case_and_question_and_leave_out_unanswered():
    from pytest_llmbench.evals.decisions.paired import CASE_SEP, gate_cases

    a = answers(np.array([True, False, True]), np.array([2, 1]))
    a[1] = Decision("c0", "q1", "noul", "g", ("yes", "no"), None, GOLD, ok=False, reason="x")
    assert gate_cases(a, "correct") == {f"c0{CASE_SEP}q0": 1.0, f"c0{CASE_SEP}q1": 0.0, f"c1{CASE_SEP}q0": 1.0}
    assert set(gate_cases(a, "log_loss")) == {f"c0{CASE_SEP}q0", f"c1{CASE_SEP}q0"}
