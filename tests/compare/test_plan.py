"""The plan by cost: rounds per fresh pair against the start cost and the offset, what a budget buys, a
session budget across scenarios, the nested pilot's components, and the costs recorded sessions show."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.plan import Costs, Noise, Target, best_within, detectable_at, plan, power_at
from pytest_llmbench.compare.power import MIN_UNITS

ROOT = Path(__file__).resolve().parents[2]


def _lab() -> Any:
    """experiments/compare/plan_lab.py: the planner's lab functions (issue 54 moved them out of the package)."""
    spec = importlib.util.spec_from_file_location("plan_lab", ROOT / "experiments" / "compare" / "plan_lab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


LAB = _lab()
units_needed, optimal_unit_rounds = LAB.units_needed, LAB.optimal_unit_rounds
detectable_in, shared_offset_false_alarm = LAB.detectable_in, LAB.shared_offset_false_alarm
H200_BLOCKS = ROOT / "experiments" / "data" / "compare" / "compare_h200" / "pytest_blocks.jsonl"
CPU_BUMP = ROOT / "experiments" / "data" / "compare" / "engine_bump_cpu.jsonl"
TPUT = Sizes("ratio", 0.01, 0.03)
TARGET = Target(TPUT, alpha=0.01)
H200_ROUND_S, H200_SD_WITHIN = 1.5, 0.035


def h200(start_per_arm: float) -> Costs:
    return Costs.of_arms(start_per_arm, start_per_arm, H200_ROUND_S, warmup_s=0.9)


def test_power_is_the_noncentral_t_of_the_unit_level_test():
    noise = Noise(0.01, 0.035)
    n, m = 12, 8
    sd = math.sqrt(0.01**2 + 0.035**2 / m)
    ncp = (math.log(0.99) - math.log(0.97)) * math.sqrt(n) / sd
    assert power_at(n, m, noise, TARGET) == pytest.approx(stats.nct.sf(stats.t.isf(0.01, n - 1), n - 1, ncp))
    need = units_needed(m, noise, TARGET)
    assert need is not None
    assert power_at(need, m, noise, TARGET) >= 0.95 > power_at(need - 1, m, noise, TARGET)


def test_the_plan_reaches_the_power_and_detects_the_target_size():
    p = plan("chat-1u", h200(60.0), Noise(0.01, H200_SD_WITHIN), TARGET)
    assert p.reached and p.power >= 0.95
    assert p.detectable <= 0.03
    assert p.unit_rounds % 2 == 0 and p.units >= MIN_UNITS
    assert p.seconds == pytest.approx(p.units * (120.0 + 0.9 + p.unit_rounds * H200_ROUND_S))


def test_the_plan_is_the_cheapest_of_every_whole_abba_unit():
    costs, noise = h200(30.0), Noise(0.01, H200_SD_WITHIN)
    p = plan("x", costs, noise, TARGET)
    for m in range(2, 200, 2):
        n = units_needed(m, noise, TARGET)
        assert n is not None and costs.seconds(n, m) >= p.seconds - 1e-9, m


def test_rounds_per_unit_grow_with_the_start_cost():
    noise = Noise(0.01, H200_SD_WITHIN)
    rounds = [plan("x", h200(s), noise, TARGET).unit_rounds for s in (1.0, 30.0, 180.0)]
    assert rounds[0] < rounds[1] < rounds[2]
    assert [optimal_unit_rounds(h200(s), noise) for s in (1.0, 30.0)] == sorted(
        optimal_unit_rounds(h200(s), noise) for s in (1.0, 30.0)
    )


def test_rounds_per_unit_shrink_as_the_offset_between_starts_grows():
    rounds = [plan("x", h200(60.0), Noise(b, H200_SD_WITHIN), TARGET).unit_rounds for b in (0.005, 0.01, 0.02, 0.04)]
    assert rounds == sorted(rounds, reverse=True) and rounds[0] > rounds[-1]


def test_the_classic_allocation_is_the_continuous_optimum():
    costs, noise = Costs(60.0, 1.5), Noise(0.01, 0.035)
    m = optimal_unit_rounds(costs, noise)
    assert m == pytest.approx(math.sqrt(60.0 * 0.035**2 / (1.5 * 0.01**2)))

    def z_seconds(k: float) -> float:  # seconds at the large-sample size, per unit of the target
        return (0.01**2 + 0.035**2 / k) * (60.0 + 1.5 * k)

    assert z_seconds(m) < min(z_seconds(0.8 * m), z_seconds(1.25 * m))


def test_without_an_offset_it_keeps_the_pair_up_but_keeps_the_floor_of_units():
    noise = Noise(0.0, H200_SD_WITHIN)
    assert optimal_unit_rounds(h200(180.0), noise) == math.inf
    p = plan("x", h200(180.0), noise, TARGET)
    assert p.units == MIN_UNITS and p.unit_rounds >= 40  # few starts, many rounds each, still df 3
    assert p.power >= 0.95
    assert units_needed(p.unit_rounds - 2, noise, TARGET) > MIN_UNITS  # the fewest rounds that let 4 units do


def test_a_fixed_layout_is_planned_as_given():
    per_block = Costs.of_arms(60.0, 60.0, 1.5)  # every block starts its server: two starts per round
    p = plan("x", per_block, Noise(0.01, H200_SD_WITHIN), TARGET, unit_rounds=1)
    assert p.unit_rounds == 1 and p.power >= 0.95
    assert p.seconds > plan("x", per_block, Noise(0.01, H200_SD_WITHIN), TARGET).seconds


def test_concurrent_starts_cost_the_longer_arm():
    assert Costs.of_arms(50.0, 70.0, 1.5).start_s == 120.0
    assert Costs.of_arms(50.0, 70.0, 1.5, concurrent=True).start_s == 70.0


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="round_s"):
        Costs(10.0, 0.0)
    with pytest.raises(ValueError, match="start_s"):
        Costs(-1.0, 1.0)
    with pytest.raises(ValueError, match="both SDs are 0"):
        Noise(0.0, 0.0)
    with pytest.raises(ValueError, match="at least 4 units"):
        Target(TPUT, alpha=0.01, min_units=3)
    with pytest.raises(ValueError, match="alpha"):
        Target(TPUT, alpha=0.6)


def test_what_a_budget_buys_shrinks_with_the_budget_and_fits_in_it():
    costs, noise = h200(60.0), Noise(0.01, H200_SD_WITHIN)
    hour, quarter = (best_within("x", b, costs, noise, TARGET) for b in (3600.0, 900.0))
    assert hour.seconds <= 3600.0 and quarter.seconds <= 900.0
    assert hour.detectable < quarter.detectable
    assert hour.detectable == pytest.approx(detectable_at(hour.units, hour.unit_rounds, noise, TARGET))
    own = plan("x", costs, noise, TARGET)
    assert best_within("x", own.seconds, costs, noise, TARGET).detectable <= 0.03 + 1e-12


def test_a_budget_below_the_floor_says_it_cannot_judge():
    p = best_within("prompt120k-1u", 200.0, h200(60.0), Noise(0.01, H200_SD_WITHIN), TARGET)
    assert p.units == 0 and not p.reached and math.isinf(p.detectable)
    assert p.describe().startswith("prompt120k-1u: not judged (budget too small to judge: 4 units need ~")


def test_describe_reads_like_the_plan_table():
    p = plan("chat-1u", h200(30.0), Noise(0.01, H200_SD_WITHIN), TARGET)
    assert (
        p.describe()
        == f"chat-1u: {p.units} units of {p.unit_rounds} rounds, ~{round(p.seconds / 60)} min, detects >= 3%"
    )
    short = best_within("x", 60.0, h200(0.7), Noise(0.0, H200_SD_WITHIN), TARGET)
    assert (
        short.describe().startswith(f"x: {short.units} units of {short.unit_rounds} rounds, ~")
        and " s, " in short.describe()
    )


def test_a_shared_offset_is_alpha_at_zero_and_grows_with_the_units():
    assert shared_offset_false_alarm(0.0, 0.035, 50, TARGET) == TARGET.alpha
    few, many = (shared_offset_false_alarm(0.01, 0.035, n, TARGET) for n in (10, 200))
    assert TARGET.alpha < few < many


def test_a_shared_offset_matches_a_simulation():
    rng = np.random.default_rng(11)
    reps, n, shared, unit_sd = 40_000, 30, 0.01, 0.035
    d = math.log(0.99) + shared * rng.standard_normal((reps, 1)) + unit_sd * rng.standard_normal((reps, n))
    upper = d.mean(axis=1) + stats.t.isf(0.01, n - 1) * d.std(axis=1, ddof=1) / math.sqrt(n)
    hits = int(np.sum(upper < math.log(0.99)))
    ci = stats.binomtest(hits, reps).proportion_ci(0.999, method="exact")
    assert ci.low <= shared_offset_false_alarm(shared, unit_sd, n, TARGET) <= ci.high


def test_the_need_beyond_the_window_is_found_by_bisection_and_none_beyond_the_limit():
    from pytest_llmbench.compare.plan import _units_needed

    noise = Noise(0.01, H200_SD_WITHIN)
    wide = _units_needed([2, 8, 40], noise, TARGET)
    assert _units_needed([2, 8, 40], noise, TARGET, window=1) == wide
    assert units_needed(2, Noise(0.0, 5.0), TARGET, max_units=1000) is None
    p = plan("x", h200(1.0), Noise(0.0, 50.0), TARGET, max_unit_rounds=4)
    assert not p.reached and p.describe().endswith("(out of reach)")


def test_detectable_in_is_what_the_best_plan_within_the_budget_detects():
    costs, noise = h200(60.0), Noise(0.01, H200_SD_WITHIN)
    assert detectable_in(3600.0, costs, noise, TARGET) == best_within("x", 3600.0, costs, noise, TARGET).detectable
    assert math.isinf(detectable_in(100.0, costs, noise, TARGET))


def test_the_session_unit_is_capped_by_the_budget_below_the_floor():
    """Issue 57: a running comparison whose budget cannot hold MIN_UNITS units plans none, and says what the
    floor would cost (4 units of 2 rounds at a 60-s start: 4 x (60 + 2 x 2) s = 256 s); with the floor
    asked for it plans the floor, over budget, and says that."""
    from pytest_llmbench.compare.plan import unit_for_session

    costs, noise = Costs(60.0, 2.0), Noise(0.01, 0.035)
    target = Target(Sizes("ratio", 0.01, 0.03), 0.01)
    capped = unit_for_session("s", costs, noise, target, budget_s=180.0)
    assert capped.units == 0 and not capped.reached and capped.seconds == 0
    assert capped.note == "budget too small to judge: the 4-unit floor would cost ~4 min"
    assert capped.describe() == "s: not judged (budget too small to judge: the 4-unit floor would cost ~4 min)"
    forced = unit_for_session("s", costs, noise, target, budget_s=180.0, force_floor=True)
    assert (forced.units, forced.unit_rounds, forced.seconds) == (MIN_UNITS, 2, 256.0)
    assert "over budget" in forced.note and "--llmbench-compare-floor" in forced.note
    fits = unit_for_session("s", costs, noise, target, budget_s=256.0)
    assert fits.units >= MIN_UNITS and fits.seconds <= 256.0
