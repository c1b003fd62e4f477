"""A capacity search against a real llama-server with SmolLM2: probes are open-loop runs at their rates, the SLO
decides, and the result carries the search (a few short requests a probe)."""

import pytest

from pytest_llmbench.workload.scenario import Scenario, run_scenario

pytestmark = pytest.mark.integration

BASE = {"dataset": "random", "input_len": 16, "output_len": 4, "num_prompts": 6, "concurrency": 16, "seed": 3}
SPEC = {"target": 0.75, "confidence": 0.75, "start_rps": 1.0, "min_rps": 0.5, "max_rps": 2.0, "max_probes": 4}


def test_a_loose_slo_passes_every_rate_up_to_max_rps(smol_server):
    sc = Scenario("cap", warmup=1, slo="e2el:60000", capacity=SPEC, scrape_interval_s=0.0, **BASE)
    result = run_scenario(smol_server, sc)
    m = result.metrics
    assert [(p["rate"], p["good"], p["n"], p["outcome"]) for p in m["capacity"]["probes"]] == [
        (1.0, 6, 6, "pass"),
        (2.0, 6, 6, "pass"),
    ]
    assert (m["capacity_rps"], m["capacity_passed_rps"], m["capacity_stop"]) == (2.0, 2.0, "max_rps 2 passed")
    # the requests kept are the passing probe's, sent open loop at its rate (not one after another)
    assert m["request_rate"] == 2.0 and len(result.records) == 6
    assert [r.scheduled_s for r in result.records] == Scenario("x", request_rate=2.0, seed=3).send_times(6)
    assert [c["rate"] for c in m["capacity"]["curve"]] == [1.0, 2.0] and all(
        c["mean_ttft_ms"] > 0 for c in m["capacity"]["curve"]
    )
    assert any("capacity search: 2 req/s" in n for n in result.notes)


def test_an_slo_no_request_meets_finds_no_capacity(smol_server):
    sc = Scenario("cap", warmup=0, slo={"ttft": 0.001}, capacity=SPEC, scrape_interval_s=0.0, **BASE)
    m = run_scenario(smol_server, sc).metrics
    assert [(p["rate"], p["good"], p["outcome"]) for p in m["capacity"]["probes"]] == [
        (1.0, 0, "fail"),
        (0.5, 0, "fail"),
    ]
    assert (m["capacity_rps"], m["capacity_passed_rps"], m["capacity_stop"]) == (0.0, None, "min_rps 0.5 failed")
