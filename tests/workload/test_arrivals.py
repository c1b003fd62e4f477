"""Open-loop arrivals (workload/arrivals.py): the gaps' law from a seed, the ramp, the client lag."""

import math

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.workload.arrivals import lag_metrics, lag_note, schedule
from pytest_llmbench.workload.records import RequestRecord
from pytest_llmbench.workload.scenario import Scenario


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    a = Scenario("s", request_rate=5.0, seed=3).send_times(50)
    assert a == Scenario("s", request_rate=5.0, seed=3, concurrency=4).send_times(50)  # both arms alike
    assert a != Scenario("s", request_rate=5.0, seed=4).send_times(50)
    assert Scenario("s").send_times(50) is None  # closed loop


def test_poisson_gaps_are_exponential_at_the_rate():
    gaps = np.diff(schedule(20001, 8.0, seed=1))
    assert gaps.mean() == pytest.approx(1 / 8.0, rel=0.03)
    assert stats.kstest(gaps, "expon", args=(0, 1 / 8.0)).pvalue > 0.001


@pytest.mark.parametrize("k", [0.25, 4.0])
def test_burstiness_sets_the_coefficient_of_variation(k):
    gaps = np.diff(schedule(20001, 2.0, burstiness=k, seed=2))
    assert gaps.mean() == pytest.approx(0.5, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(1 / math.sqrt(k), rel=0.05)


def test_an_infinite_rate_sends_everything_at_once():
    assert schedule(4, math.inf) == [0.0] * 4


def test_the_ramp_rises_linearly_then_holds_the_rate():
    t = np.asarray(schedule(40001, 10.0, seed=5, ramp_up_s=100.0))
    during = np.sum(t < 50.0)  # Λ(50) = 10·50²/(2·100) = 125 requests expected in the first half of the ramp
    assert during == pytest.approx(125, abs=4 * math.sqrt(125))
    late = np.diff(t[t > 200.0])
    assert late.mean() == pytest.approx(0.1, rel=0.03)
    assert np.all(np.diff(t) >= 0)


@pytest.mark.parametrize("kw", [{"request_rate": 0.0}, {"request_rate": 1.0, "burstiness": 0.0}])
def test_bad_rates_name_the_scenario(kw):
    with pytest.raises(ValueError, match="scenario 'x'"):
        Scenario("x", **kw)


def _sent(lags_ms):
    return [RequestRecord(index=i, ok=True, send_lag_s=x / 1e3, scheduled_s=float(i)) for i, x in enumerate(lags_ms)]


def test_a_client_that_kept_up_is_not_blamed():
    m = lag_metrics(_sent([0.2] * 50), rate=10.0)
    assert m["client_limited"] is False and m["max_send_lag_ms"] == pytest.approx(0.2)
    assert lag_note(m, 10.0) is None


def test_a_client_far_behind_its_schedule_is_named_as_the_limit():
    m = lag_metrics(_sent([1.0] * 40 + [400.0] * 10), rate=10.0)  # p99 400 ms against a 100-ms mean gap
    assert m["client_limited"] is True
    assert "client-limited" in (lag_note(m, 10.0) or "")
