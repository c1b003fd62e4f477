"""Open-loop arrivals and SLOs against a real llama-server with SmolLM2 (a few short requests)."""

import pytest

from pytest_llmbench.workload.scenario import Scenario, run_scenario

pytestmark = pytest.mark.integration


def test_requests_leave_on_their_schedule_and_attainment_follows_the_slo(smol_server):
    sc = Scenario(
        "open", output_len=8, num_prompts=6, concurrency=6, warmup=1, request_rate=5.0, seed=7, slo="e2el:600000"
    )
    result = run_scenario(smol_server, sc)
    m = result.metrics
    assert m["failed"] == 0, result.errors
    planned = sc.send_times(6)
    t0 = min(r.started_at for r in result.records)
    for r, at in zip(result.records, planned, strict=True):
        assert r.scheduled_s == at
        # sent at its time, not when the previous answer came back (closed loop would wait ~a request)
        assert r.started_at - t0 == pytest.approx(at, abs=0.25)
    assert 0 <= m["mean_send_lag_ms"] < 250 and m["client_limited"] is False
    assert m["request_rate"] == 5.0
    assert (m["slo_good"], m["slo_requests"], m["slo_attainment"]) == (6, 6, 1.0)
    assert m["request_goodput"] == pytest.approx(m["request_throughput"])


def test_an_slo_no_request_can_meet_gives_zero_goodput(smol_server):
    sc = Scenario("tight", output_len=8, num_prompts=3, concurrency=1, warmup=0, slo={"ttft": 0.001})
    m = run_scenario(smol_server, sc).metrics
    assert m["completed"] == 3
    assert (m["slo_attainment"], m["request_goodput"], m["output_token_goodput"]) == (0.0, 0.0, 0.0)
