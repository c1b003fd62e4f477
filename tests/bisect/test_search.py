"""The search over simulated step outcomes: a sequence whose first slower build is known, steps answered
as a comparison would answer them (different / same / unknown / skip), and what each answer costs."""

from __future__ import annotations

import math

import pytest

from pytest_llmbench.bisect.search import Search, Step, StepResult, ahead, bisect, max_comparisons, pick_middle


class Simulated:
    """Builds ``0 … n-1``; from ``first_slow`` on they are slower. ``broken`` builds fail to start;
    ``unclear`` steps (reference, candidate) answer unknown for their first ``unclear_attempts`` attempts."""

    def __init__(self, n, first_slow, *, broken=(), unclear=None, unclear_attempts=1, seconds=10.0):
        self.n, self.first_slow = n, first_slow
        self.broken = set(broken)
        self.unclear = unclear or set()
        self.unclear_attempts = unclear_attempts
        self.seconds = seconds
        self.steps: list[Step] = []

    def __call__(self, step: Step) -> StepResult:
        self.steps.append(step)
        for i in (step.reference, step.candidate):
            if i in self.broken:
                return StepResult("skip", 1.0, skipped=i, reason=f"build {i} exited 1 at start")
        if (step.reference, step.candidate) in self.unclear and step.attempt < self.unclear_attempts:
            return StepResult("unknown", self.seconds * 2**step.attempt, reason="inconclusive: output_throughput")
        slow = lambda i: i >= self.first_slow  # noqa: E731
        differs = slow(step.candidate) and not slow(step.reference)
        return StepResult("different" if differs else "same", self.seconds * 2**step.attempt)


@pytest.mark.parametrize("n", range(2, 20))
def test_first_slow_build_found_within_the_bound_for_every_position(n):
    bound = math.ceil(math.log2(n)) + 3
    for k in range(1, n):
        sim = Simulated(n, k)
        found = bisect(n, sim)
        assert found.status == "culprit" and found.culprit == k and found.last_good == k - 1, (n, k, found.message)
        assert found.comparisons == len(sim.steps) <= max_comparisons(n) <= bound, (n, k)
        assert sim.steps[0] == Step(1, "ends", 0, n - 1), "both ends are compared first"
        assert sim.steps[-1].kind == "confirm" and (sim.steps[-1].reference, sim.steps[-1].candidate) == (k - 1, k)
        assert found.states[k] == "bad" and found.states[k - 1] == "good"


def test_each_step_compares_against_the_nearest_build_known_good():
    sim = Simulated(9, 6)
    bisect(9, sim)
    pairs = [(s.kind, s.reference, s.candidate) for s in sim.steps]
    # 0 vs 8 differ; 4 is like 0; 6 differs from 4; 5 is like 4; confirm 5 → 6
    assert pairs == [("ends", 0, 8), ("bisect", 0, 4), ("bisect", 4, 6), ("bisect", 4, 5), ("confirm", 5, 6)]


def test_a_broken_build_is_skipped_named_and_searched_around():
    sim = Simulated(8, 5, broken={3})
    found = bisect(8, sim, names=[f"b{i}" for i in range(8)])
    assert found.status == "culprit" and found.culprit == 5
    assert found.states[3] == "skip" and "b3 exited 1" in found.reasons[3].replace("build 3", "b3")
    assert [s.candidate for s in sim.steps].count(3) == 1, "a skipped build is never tried again"
    assert found.comparisons <= math.ceil(math.log2(8)) + 3


def test_a_skipped_build_next_to_the_culprit_leaves_a_confirmed_range_not_a_guess():
    found = bisect(8, Simulated(8, 4, broken={3}), names=[f"b{i}" for i in range(8)])
    assert found.status == "range" and found.culprit is None
    assert (found.last_good, found.first_bad) == (2, 4)
    assert "between b2 and b4" in found.message and "b3 (skip)" in found.message


def test_an_inconclusive_step_gets_more_units_then_decides():
    sim = Simulated(8, 5, unclear={(0, 3)}, unclear_attempts=1)
    found = bisect(8, sim, max_attempts=2)
    assert found.culprit == 5
    retried = [s for s in sim.steps if (s.reference, s.candidate) == (0, 3)]
    assert [s.attempt for s in retried] == [0, 1]
    assert found.seconds == pytest.approx(sum(10.0 * 2**s.attempt if s.kind else 0 for s in sim.steps))


def test_a_build_waited_for_once_does_not_price_the_retry_out_of_the_budget():
    """The H200 run: the ends waited 282 s for a build, then compared 247 s, inconclusive. Priced at 529 s a
    step, the retry (2 x) did not fit 1,250 GPU-s; the build is cached, so the retry costs 2 x 247 s."""
    answers = iter([StepResult("unknown", 529.0, build_seconds=282.0), StepResult("different", 494.0)])
    calls: list[Step] = []

    def compare(step: Step) -> StepResult:
        calls.append(step)
        return next(answers, StepResult("same", 247.0))

    found = bisect(5, compare, budget_s=1250.0, max_attempts=2)
    assert [(s.kind, s.attempt) for s in calls[:2]] == [("ends", 0), ("ends", 1)]
    assert found.status != "not-reproduced"


def test_a_step_that_stays_unknown_leaves_that_build_undecided_and_is_searched_around():
    sim = Simulated(8, 5, unclear={(3, 5)}, unclear_attempts=9)  # 3 → 5 never decides
    found = bisect(8, sim, max_attempts=2, names=[f"b{i}" for i in range(8)])
    assert found.states[5] == "unknown"
    assert found.status == "range" and (found.last_good, found.first_bad) == (4, 6) and found.culprit is None
    assert "b5 (unknown)" in found.message


def test_a_budget_too_small_ends_unknown_between_two_builds_never_a_wrong_culprit():
    for n in range(3, 17):
        for k in range(1, n):
            for budget in (10.0, 25.0, 35.0, 45.0):
                found = bisect(n, Simulated(n, k), budget_s=budget, names=[f"b{i}" for i in range(n)])
                assert found.seconds <= budget + 10.0, "the first step always runs; none starts past the budget"
                if found.status == "culprit":
                    assert found.culprit == k
                else:
                    assert found.status == "unknown" and found.last_good < k <= found.first_bad, (n, k, budget)
                    assert found.message.startswith(f"unknown between b{found.last_good} and b{found.first_bad}")
                    assert "budget is spent" in found.message


def test_budget_message_names_the_range_and_what_was_spent():
    found = bisect(16, Simulated(16, 11), budget_s=25.0, names=[f"v{i}" for i in range(16)])
    assert found.status == "unknown"
    assert found.message == "unknown between v7 and v15: the budget is spent (20 of 25 GPU-s, a step ~10)"


def test_ahead_lists_the_next_middles_level_by_level():
    untested = ["untested"] * 34
    # the H200 lease-3 range: 11205 (16) good, 11434 (33) bad → 11311 (24), then 11243 (20) or 11368 (28)
    assert ahead(16, 33, untested, levels=2) == [24, 20, 28]
    assert ahead(16, 33, untested, levels=1) == [24]
    assert ahead(4, 5, untested) == [] and ahead(4, 6, untested, levels=3) == [5]
    skipped = list(untested)
    skipped[24] = "skip"  # a build known broken is not a middle
    assert ahead(16, 33, skipped, levels=1) == [25]


def test_a_bisect_stopped_by_its_budget_says_which_builds_going_on_needs():
    found = bisect(16, Simulated(16, 11), budget_s=25.0, names=[f"v{i}" for i in range(16)])
    assert (found.status, found.last_good, found.first_bad) == ("unknown", 7, 15)
    assert found.to_go_on() == [7, 11, 9, 13]  # the reference, the next middle, then one per outcome
    assert bisect(16, Simulated(16, 11)).to_go_on() == []  # a culprit: nothing to go on with
    # only the confirmation left: the pair itself
    unconfirmed = bisect(3, lambda s: StepResult("unknown" if s.kind == "confirm" else "different", 1.0))
    assert unconfirmed.status == "unknown" and unconfirmed.to_go_on() == [0, 1]
    # ends that stayed inconclusive: both ends (a resumed run retries them with more units); ends that are
    # equivalent: nothing
    assert bisect(6, lambda s: StepResult("unknown", 5.0)).to_go_on() == [0, 5]
    assert bisect(6, lambda s: StepResult("same", 5.0)).to_go_on() == []


def test_before_every_step_the_farm_hears_which_builds_come_next():
    heard: list[list[int]] = []
    sim = Simulated(9, 6)
    bisect(9, sim, on_ahead=heard.append, look_ahead=2)
    # the step about to run first, then the next middles level by level (one per outcome still possible)
    assert heard == [
        [0, 8, 4, 2, 6],  # the ends, then 4, then 2 (4 bad) or 6 (4 good)
        [0, 4, 2, 6],  # 0 → 4 next
        [4, 6, 5, 7],  # 4 was good: 4 → 6, then 5 or 7
        [4, 5],  # 6 was bad: 4 → 5, nothing after it
        [5, 6],  # the confirmation
    ]
    assert [(s.reference, s.candidate) for s in sim.steps] == [(0, 8), (0, 4), (4, 6), (4, 5), (5, 6)]
    # every step's two builds were announced before it ran, the candidate's first announcement a level ahead
    for step, said in zip(sim.steps, heard, strict=True):
        assert {step.reference, step.candidate} <= set(said)


def test_a_build_that_failed_to_start_is_never_announced_again():
    heard: list[list[int]] = []
    bisect(8, Simulated(8, 5, broken={3}), on_ahead=heard.append, look_ahead=1)
    assert heard[:3] == [[0, 7, 3], [0, 3], [0, 4]]  # 3 failed to start: the next middle is 4
    assert all(3 not in said for said in heard[2:])


def test_the_ends_must_reproduce_the_regression():
    same = bisect(6, lambda s: StepResult("same", 5.0))
    assert same.status == "not-reproduced" and same.comparisons == 1 and "equivalent" in same.message
    unclear = bisect(6, lambda s: StepResult("unknown", 5.0), max_attempts=3)
    assert unclear.status == "not-reproduced" and unclear.comparisons == 3


def test_an_end_that_cannot_run_stops_the_bisect_naming_it():
    found = bisect(6, Simulated(6, 3, broken={0}), names=list("abcdef"))
    assert found.status == "broken-end" and found.states[0] == "skip"
    assert found.message.startswith("the good build a cannot run: build 0 exited 1")


def test_a_pair_that_does_not_confirm_is_unknown():
    def flaky(step: Step) -> StepResult:
        if step.kind == "confirm":
            return StepResult("same", 1.0)
        return Simulated(6, 3)(step)

    found = bisect(6, flaky, names=list("abcdef"))
    assert found.status == "unknown" and found.culprit is None
    assert found.message == "unknown between c and d: the culprit pair did not confirm (same)"


def test_a_failing_reference_makes_the_candidate_undecided_not_bad():
    def ref_fails(step: Step) -> StepResult:
        if step.kind == "bisect" and step.reference == 3:
            return StepResult("skip", 1.0, skipped=3, reason="reference did not start")
        return Simulated(8, 6)(step)

    found = bisect(8, ref_fails)
    assert "bad" not in [found.states[i] for i in range(1, 6)]
    assert found.culprit is None and found.last_good < 6 <= found.first_bad


def test_pick_middle_prefers_the_untested_build_nearest_the_middle():
    states = ["good", "untested", "untested", "skip", "untested", "untested", "bad"]
    assert pick_middle(0, 6, states) == 2  # 3 is skipped; 2 and 4 tie, 1 from the middle: the lower
    assert pick_middle(0, 7, [*states[:6], "untested", "bad"]) == 4  # 0.5 from 3.5
    assert pick_middle(0, 1, ["good", "bad"]) is None


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="good and a bad build"):
        Search(1, lambda s: StepResult("same", 0.0))
    with pytest.raises(ValueError, match="step outcome 'maybe'"):
        StepResult("maybe", 0.0)
    with pytest.raises(ValueError, match="names the build"):
        StepResult("skip", 0.0)


def test_a_step_holding_most_of_the_change_is_not_called_same() -> None:
    """H200 lease 6: ends ×0.970 [0.961, 0.980]; step 6 (b11368 → b11378) read ×0.984 [0.975, 0.994], ruled out
    3% and was called same. Judged by which end it resembles it is retried (|z| < 1), then bad-like: culprit."""
    from pytest_llmbench.bisect.search import reading_of

    def shown(r: float, lo: float, hi: float) -> dict[str, float]:
        return {"ratio": r, "ci_low": lo, "ci_high": hi}

    ends = reading_of(shown(0.9705, 0.9609, 0.9802))
    step6 = reading_of(shown(0.9844, 0.9747, 0.9942))
    assert ends is not None and step6 is not None

    def compare(step: Step) -> StepResult:
        if step.kind == "bisect":  # the one build between: the recorded equivocal read, twice
            return StepResult("same", 1.0, reading=step6)
        return StepResult("different", 1.0, reading=ends)

    found = bisect(3, compare, max_attempts=2, size_steps=False)
    assert [(s.kind, s.attempt, r.outcome) for s, r in found.steps] == [
        ("ends", 0, "different"),
        ("bisect", 0, "unknown"),
        ("bisect", 1, "different"),
        ("confirm", 0, "different"),
    ]
    assert found.culprit == 1
    old = bisect(3, compare, max_attempts=2, rule="verdict", size_steps=False)
    assert old.culprit == 2  # the verdict rule called the step same
