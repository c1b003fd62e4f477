"""capacity/search.py: the probe rule (a one-sided Clopper-Pearson bound must clear the target), the
bracketing and bisection, the probe budget, and the interpolated crossing."""

import math

import pytest
from scipy import stats

from pytest_llmbench.capacity.search import FAIL, PASS, CapacityError, CapacitySpec, bounds, find_capacity
from pytest_llmbench.compare.judging import source_of
from pytest_llmbench.compare.margins import sizes_for
from pytest_llmbench.workload.scenario import Scenario, WorkloadError, run_scenario


def step_server(capacity: float, n: int = 60):
    """A probe whose requests all meet the SLO below ``capacity`` req/s and none above; records its calls."""
    calls: list[tuple[float, int]] = []

    def probe(rate: float, run: int) -> tuple[int, int]:
        calls.append((rate, run))
        return (n if rate <= capacity else 0), n

    return probe, calls


def test_bounds_are_one_sided_clopper_pearson():
    low, high = bounds(59, 59, 0.95)
    assert low == pytest.approx(0.05 ** (1 / 59))  # all good: the lower bound solves p^n = 1 - confidence
    assert high == 1.0
    for good, n, confidence in [(50, 60, 0.9), (1, 30, 0.95), (0, 12, 0.8), (39, 40, 0.99)]:
        ci = stats.binomtest(good, n).proportion_ci(2 * confidence - 1, method="exact")
        assert bounds(good, n, confidence) == pytest.approx((ci.low, ci.high))


def test_the_search_brackets_then_bisects_to_the_resolution():
    probe, calls = step_server(3.0)
    cap = find_capacity(probe, CapacitySpec(start_rps=1.0, resolution=1.1, max_probes=20))
    assert [r for r, _ in calls[:3]] == [1.0, 2.0, 4.0]  # doubling until a rate fails
    assert cap.passed_rps is not None and cap.failed_rps is not None
    assert cap.passed_rps <= 3.0 < cap.failed_rps
    assert cap.failed_rps / cap.passed_rps <= 1.1
    assert cap.passed_rps <= cap.capacity_rps < cap.failed_rps
    assert cap.stop == "resolution"
    assert [p.outcome for p in cap.probes if p.rate <= 3.0] == [PASS] * sum(1 for p in cap.probes if p.rate <= 3.0)


def test_starting_above_capacity_halves_down():
    probe, calls = step_server(0.3)
    cap = find_capacity(probe, CapacitySpec(start_rps=2.0, resolution=1.5, max_probes=20))
    assert [r for r, _ in calls[:4]] == [2.0, 1.0, 0.5, 0.25]
    assert cap.passed_rps == 0.25 and cap.failed_rps is not None and cap.failed_rps / cap.passed_rps <= 1.5


def test_a_rate_whose_bound_straddles_the_target_is_probed_again_then_fails():
    calls = []

    def probe(rate, run):
        calls.append((rate, run))
        return 58, 60  # 96.7% observed: above 0.95, but the lower 95% bound (~0.90) is not

    cap = find_capacity(probe, CapacitySpec(start_rps=1.0, min_rps=1.0, repeats=2, max_probes=10))
    assert calls == [(1.0, 0), (1.0, 1), (1.0, 2)]  # the same rate, a new run index (seed) each time
    assert cap.probes[0].n == 180 and cap.probes[0].outcome == FAIL
    assert cap.capacity_rps == 0.0 and cap.passed_rps is None and cap.stop == "min_rps 1 failed"


def test_the_probe_budget_counts_every_run():
    probe, calls = step_server(3.0)
    cap = find_capacity(probe, CapacitySpec(start_rps=1.0, resolution=1.01, max_probes=5))
    assert len(calls) == 5 and cap.stop == "probe budget spent"
    assert cap.passed_rps is not None and cap.passed_rps <= 3.0


def test_a_server_that_passes_max_rps_reports_it():
    probe, _ = step_server(1e9)
    cap = find_capacity(probe, CapacitySpec(start_rps=1.0, max_rps=4.0))
    assert (cap.capacity_rps, cap.failed_rps, cap.stop) == (4.0, None, "max_rps 4 passed")


def test_the_crossing_moves_inside_the_bracket_with_the_counts():
    """Two searches ending in the same bracket differ by where the bound crosses: the comparison's spread."""

    def curve(good_at_edge):
        def probe(rate, run):
            if rate <= 2.0:
                return 60, 60
            return (good_at_edge, 60) if rate <= 2.5 else (0, 60)

        return probe

    spec = CapacitySpec(start_rps=1.0, resolution=1.3, max_probes=12, repeats=0)
    a = find_capacity(curve(55), spec)
    b = find_capacity(curve(30), spec)
    assert a.passed_rps == b.passed_rps and a.failed_rps == b.failed_rps
    assert a.passed_rps < b.capacity_rps < a.capacity_rps < a.failed_rps


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"target": 1.5}, "target"),
        ({"start_rps": 0}, "min_rps"),
        ({"resolution": 1.0}, "resolution"),
        ({"tagret": 0.9}, "unknown capacity key(s) ['tagret']"),
        ({"max_probes": "many"}, "invalid literal"),
    ],
)
def test_a_bad_spec_names_the_scenario_and_key(spec, words):
    with pytest.raises(CapacityError, match=r"scenario 'cap', key 'capacity'") as e:
        Scenario("cap", slo="ttft:100", capacity=spec)
    assert words in str(e.value)


def test_a_capacity_scenario_without_an_slo_is_refused_before_any_request():
    with pytest.raises(WorkloadError, match="scenario 'cap': a capacity search needs an SLO"):
        run_scenario(None, Scenario("cap", capacity={"target": 0.9}))  # type: ignore[arg-type]


def test_a_comparison_judges_capacity_per_unit_as_a_ratio():
    source = source_of("capacity_rps")
    assert source is not None and source.per == "round" and source.higher_is_better
    sizes = sizes_for("capacity_rps")
    assert (sizes.kind, sizes.ignore, sizes.detect) == ("ratio", 0.02, 0.10)
    assert math.isfinite(sizes.detect)
