"""The planner over arm placements (issue 57): each placement priced by compare/plan.py's one search, the
cheapest that reaches the target chosen, and a placement that cannot run here named with why."""

from __future__ import annotations

import math

import pytest

from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.placement import (
    INTERLEAVED,
    PARALLEL,
    PER_BLOCK,
    SHARED,
    Runner,
    auto_placement,
    choose,
    costs_of,
    noise_of,
    plan_placement,
    table,
)
from pytest_llmbench.compare.plan import Noise, Target, power_at

TARGET = Target(Sizes("ratio", 0.01, 0.03), alpha=0.01)
NOISE = Noise(0.01, 0.035)  # the H200's round SD, a 1% offset between starts
ROUND_S = 1.5


def test_a_disjoint_unit_is_two_fresh_pairs_and_its_variance_halves():
    """A disjoint unit's value averages two halves, each on its own fresh pair: both SDs over sqrt 2 in the
    nested model, the start counted once per half (2 S) and the round twice (2 R), or f R when parallel."""
    n = noise_of(INTERLEAVED, NOISE)
    assert n.unit_sd(10) == pytest.approx(math.sqrt(0.01**2 / 2 + 0.035**2 / 20))
    assert noise_of(SHARED, NOISE) == NOISE
    c = costs_of(INTERLEAVED, 60.0, ROUND_S, 1.0)
    assert c.unit_s(10) == pytest.approx(2 * (60.0 + 1.0 + 10 * ROUND_S))
    par = costs_of(PARALLEL, 60.0, ROUND_S, 1.0, interference=1.2)
    assert par.unit_s(10) == pytest.approx(2 * (60.0 + 1.0 + 10 * 1.2 * ROUND_S / 2))
    assert costs_of(PER_BLOCK, 60.0, ROUND_S, 1.0).unit_s(1) == pytest.approx(2 * 60.0 + 2 * 1.0 + ROUND_S)
    with pytest.raises(ValueError, match="unknown placement 'sideways'"):
        costs_of("sideways", 60.0, ROUND_S, 0.0)


def test_every_placement_reaches_the_target_at_the_power_its_plan_claims():
    runner = Runner(2, 8, both_fit=True)
    for placement in (SHARED, PER_BLOCK, INTERLEAVED, PARALLEL):
        p = plan_placement(placement, runner, 60.0, ROUND_S, NOISE, TARGET, 1.0)
        assert p.plan is not None and p.plan.reached, placement
        noise = noise_of(placement, NOISE)
        assert power_at(p.plan.units, p.plan.unit_rounds, noise, TARGET) >= TARGET.power
        assert p.gpu_s == pytest.approx(p.wall_s * (4 if placement in (INTERLEAVED, PARALLEL) else 2))


def test_a_config_that_cannot_share_its_gpus_goes_disjoint_on_a_big_runner_and_per_block_on_a_small_one():
    """The issue's TP=2 SGLang config at --mem-fraction-static 0.85: both arms do not fit on 2 GPUs. On an
    8-GPU runner the disjoint placement costs a fraction of per-block's GPU-seconds; on a 2-GPU runner
    per-block is all there is, and the table says why the others are not here."""
    big = Runner(2, 8, both_fit=False)
    best, plans = choose(big, 60.0, ROUND_S, NOISE, TARGET, warmup_s=1.0)
    per_block = next(p for p in plans if p.placement == PER_BLOCK)
    assert best.placement in (INTERLEAVED, PARALLEL)
    assert best.gpu_s < 0.5 * per_block.gpu_s and best.wall_s < 0.25 * per_block.wall_s
    lines = table(best, plans, TARGET)
    assert lines[0] == "placements to 95% power at 3%:"
    assert "  shared: not here (both arms do not fit on one arm's GPUs)" in lines
    assert any(line.startswith(f"* {best.placement}: ") and "arms swap sets each half" in line for line in lines)
    small, plans = choose(Runner(2, 2, both_fit=False), 60.0, ROUND_S, NOISE, TARGET)
    assert small.placement == PER_BLOCK
    assert f"  {INTERLEAVED}: not here (needs 4 GPUs, the runner has 2)" in table(small, plans, TARGET)


def test_shared_gpus_win_on_gpu_seconds_and_disjoint_on_wall_time_where_both_fit():
    runner = Runner(2, 8, both_fit=True)
    by_gpu, _ = choose(runner, 180.0, ROUND_S, NOISE, TARGET, warmup_s=1.0)
    by_wall, _ = choose(runner, 180.0, ROUND_S, NOISE, TARGET, warmup_s=1.0, by="wall")
    assert by_gpu.placement == SHARED and by_wall.placement in (INTERLEAVED, PARALLEL)
    assert by_wall.wall_s < by_gpu.wall_s and by_gpu.gpu_s < by_wall.gpu_s


def test_parallel_interference_prices_the_parallel_placement_out_when_it_is_large():
    loud = Runner(2, 8, both_fit=False, interference=2.5)
    best, _ = choose(loud, 60.0, ROUND_S, NOISE, TARGET, warmup_s=1.0)
    assert best.placement == INTERLEAVED


def test_bad_runners_and_cost_keys_are_refused_with_what_was_wrong():
    with pytest.raises(ValueError, match="runner: 1 GPU\\(s\\) cannot hold a config of 2 GPU\\(s\\) per arm"):
        Runner(2, 1, both_fit=False)
    with pytest.raises(ValueError, match="interference must be >= 1"):
        Runner(1, 2, both_fit=True, interference=0.5)
    with pytest.raises(ValueError, match="by must be 'gpu' or 'wall'"):
        choose(Runner(1, 2, both_fit=True), 60.0, ROUND_S, NOISE, TARGET, by="money")


# --- auto: the placement the session picks on a runner with a second set (issue 57) --------------------


@pytest.mark.parametrize("both_fit", [True, False])
def test_auto_goes_disjoint_parallel_where_a_second_set_exists_whatever_the_costs(both_fit):
    """The pick does not turn on the round cost auto assumes before the pilot (ASSUMED_ROUND_S): at every
    start, round cost and interference up to 1.3 the wall-time cheapest is disjoint-parallel, and the
    candidate keeps the GPUs its server runs on."""
    for start_s in (1.0, 60.0, 180.0, 600.0):
        for round_s in (0.5, 2.0, 10.0, 30.0, 300.0):
            for f in (1.0, 1.05, 1.3):
                got = auto_placement(
                    ("0", "1"), ("0", "1", "2", "3", "4"), both_fit=both_fit, start_s=start_s, noise=NOISE,
                    target=TARGET, interference=f, round_s=round_s,
                )  # fmt: skip
                assert got is not None and got.mode == "disjoint-parallel", (start_s, round_s, f)
                assert got.sets == (("2", "3"), ("0", "1"))
    assert "disjoint-parallel, the reference on 2,3, the candidate on 0,1" in got.lines[0]
    assert any(line.startswith("* disjoint-parallel") for line in got.lines)


def test_auto_without_a_second_set_leaves_the_shared_or_per_block_rule():
    assert auto_placement(("0", "1"), ("0", "1", "2"), both_fit=False, start_s=60, noise=NOISE, target=TARGET) is None
    assert auto_placement((), ("0", "1"), both_fit=True, start_s=60, noise=NOISE, target=TARGET) is None


def test_auto_with_disjoint_refused_prices_them_out_and_says_why():
    why = "ini llmbench_compare_restart_rounds = 0 is not two halves of whole ABBA pairs"
    for fit, mode in ((True, "both"), (False, "per-block")):
        got = auto_placement(
            ("0",), ("0", "1"), both_fit=fit, start_s=60, noise=NOISE, target=TARGET, disjoint_refused=why
        )
        assert got is not None and got.mode == mode and got.sets is None
        assert got.lines[-1].endswith(why)
