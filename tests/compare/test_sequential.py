"""Alpha spending over looks, the look-adjusted p, the stop rule and the standing verdicts."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from pytest_llmbench.compare.sequential import SequentialPlan, Tracker, spent
from pytest_llmbench.compare.stats import Comparison

C = Comparison(metric="output_throughput", kind="ratio", reference=100.0, candidate=100.0, estimate=1.0,
               ci_low=0.9, ci_high=1.1, margin=0.03, higher_is_better=True, p_value=0.5, verdict="inconclusive",
               n=2, method="log-ratio t over 2 rounds")


@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
@pytest.mark.parametrize(("max_looks", "min_looks"), [(10, 2), (20, 3), (5, 1), (3, 3)])
def test_per_look_alphas_sum_to_the_stated_alpha(spending, max_looks, min_looks):
    plan = SequentialPlan(alpha=0.01, max_looks=max_looks, min_looks=min_looks, spending=spending)
    looks = [plan.alpha_at(k) for k in range(min_looks, max_looks + 1)]
    assert sum(looks) == pytest.approx(0.01)
    assert all(a > 0 for a in looks)
    assert plan.alpha_at(1) == plan.alpha_at(min_looks)  # looks before min_looks carry min_looks' alpha


def test_obrien_fleming_keeps_alpha_for_the_late_looks_and_pocock_spends_early():
    obf = SequentialPlan(alpha=0.01, max_looks=10)
    pocock = SequentialPlan(alpha=0.01, max_looks=10, spending="pocock")
    obf_looks = [obf.alpha_at(k) for k in range(2, 11)]
    assert obf_looks == sorted(obf_looks) and obf.alpha_at(10) > 0.003 and obf.alpha_at(2) < 1e-6
    assert pocock.alpha_at(2) > obf.alpha_at(2) and pocock.alpha_at(10) < obf.alpha_at(10)
    assert spent(0.01, 1.0) == pytest.approx(0.01) and spent(0.01, 0.0) == 0.0


def test_adjusted_p_crosses_alpha_exactly_when_the_look_rejects():
    plan = SequentialPlan(alpha=0.01, max_looks=8)
    for look in range(2, 9):
        a = plan.alpha_at(look)
        assert plan.adjust_p(look, a * 0.999) < 0.01 < plan.adjust_p(look, a * 1.001)
    assert plan.adjust_p(2, 0.5) == 1.0


def test_stop_when_all_decided_from_min_looks_or_at_max():
    plan = SequentialPlan(alpha=0.01, max_looks=6, min_looks=3)
    decided = [replace(C, verdict="equivalent"), replace(C, metric="tpot", verdict="regressed")]
    assert not plan.stop(2, decided)
    assert plan.stop(3, decided)
    assert not plan.stop(4, decided + [C])
    assert plan.stop(6, [C])


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(alpha=0.0, max_looks=5), "alpha must be in"),
    (dict(alpha=0.01, max_looks=3, min_looks=4), "min looks"),
    (dict(alpha=0.01, max_looks=3, spending="linear"), "unknown alpha spending 'linear'"),
])
def test_bad_plans(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SequentialPlan(**kwargs)


def test_look_outside_plan_is_an_error():
    with pytest.raises(ValueError, match="look 7 outside 1..6"):
        SequentialPlan(alpha=0.01, max_looks=6).alpha_at(7)


def test_tracker_keeps_the_first_decided_verdict_and_the_smallest_adjusted_p():
    plan = SequentialPlan(alpha=0.01, max_looks=5, min_looks=2)
    t = Tracker(plan)
    # look 1: below min_looks, a "regressed" there is not a verdict yet
    standing = t.update(1, [replace(C, verdict="regressed", p_value=1e-9)])
    assert standing[0].verdict == "inconclusive" and standing[0].p_value == 1.0 and not t.done()
    t.update(2, [replace(C, p_value=0.2)])
    p2 = t.standing["output_throughput"].p_value
    assert p2 == pytest.approx(min(1.0, 0.2 * 0.01 / plan.alpha_at(2)))
    eq = replace(C, verdict="equivalent", p_value=0.9)
    t.update(3, [eq])
    assert t.standing["output_throughput"].verdict == "equivalent" and t.done()
    t.update(4, [replace(C, verdict="inconclusive", p_value=0.3)])
    assert t.standing["output_throughput"] == replace(eq, p_value=min(p2, 1.0))  # kept as decided
    with pytest.raises(ValueError, match="looks must increase"):
        t.update(4, [C])


def test_describe_names_the_spending():
    assert "O'Brien-Fleming" in SequentialPlan(alpha=0.01, max_looks=4).describe()
    assert "Pocock" in SequentialPlan(alpha=0.01, max_looks=4, spending="pocock").describe()


def undecided(estimate: float, se: float, n: int, kind: str = "ratio", margin: float = 0.03) -> Comparison:
    return replace(C, kind=kind, estimate=estimate, se=se, n=n, margin=margin)


def test_futility_stops_for_an_unchanged_build_that_cannot_reach_equivalence():
    plan = SequentialPlan(alpha=0.01, max_looks=20)
    # 5 rounds, log-ratio SD 6% (se 2.7%): even at 20 rounds the interval is wider than ±3%
    assert plan.futile(5, undecided(1.0, 0.06 / math.sqrt(5), 5))
    assert plan.stop(5, [undecided(1.0, 0.06 / math.sqrt(5), 5), replace(C, verdict="equivalent")])
    # the same spread with a 10% drop in sight: regression is reachable, keep going
    assert not plan.futile(5, undecided(0.90, 0.06 / math.sqrt(5), 5))
    # low noise: equivalence is reachable, keep going
    assert not plan.futile(5, undecided(1.0, 0.02 / math.sqrt(5), 5))


def test_futility_needs_a_t_based_comparison_and_can_be_switched_off():
    plan = SequentialPlan(alpha=0.01, max_looks=20)
    assert not plan.futile(5, replace(C, n=5))  # no standard error (McNemar, bootstrap): never futile
    assert not plan.futile(1, undecided(1.0, 0.03, 2))  # before min_looks
    assert not plan.futile(5, replace(undecided(0.9, 0.01, 5), verdict="regressed"))
    assert plan.futile(5, undecided(1.0, 0.0, 5))  # no spread, still undecided: nothing more to learn
    off = SequentialPlan(alpha=0.01, max_looks=20, futility=False)
    assert not off.futile(5, undecided(1.0, 0.06 / math.sqrt(5), 5))
    assert not off.stop(5, [undecided(1.0, 0.06 / math.sqrt(5), 5)])


def test_futility_on_a_difference_scale():
    plan = SequentialPlan(alpha=0.01, max_looks=20)
    # accept length, 64 prompts after 2 rounds, per-prompt SD 0.9: ±0.1 is out of reach in 640 prompts
    assert plan.futile(2, undecided(0.0, 0.9 / 8, 64, kind="difference", margin=0.1))
    assert not plan.futile(2, undecided(-0.3, 0.9 / 8, 64, kind="difference", margin=0.1))


def test_tracker_lists_futile_metrics():
    t = Tracker(SequentialPlan(alpha=0.01, max_looks=20))
    t.update(3, [undecided(1.0, 0.06 / math.sqrt(3), 3)])
    assert t.futile() == ["output_throughput"] and t.done()
