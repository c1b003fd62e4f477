"""The serving scenarios of the CPU suite: llama.cpp + SmolLM2-135M on 2 cores.

The benchmark posts' bench_serving scenarios scaled to a 2-core machine: ShareGPT chat at 1 and 4 users, and an
exact-length ~2k-token prompt at 1 user. Every config marked ``cpu`` runs every scenario.
"""

import pytest

from pytest_llmbench import Scenario

SCENARIOS = [
    Scenario("chat-1u", dataset="sharegpt", output_len=64, num_prompts=4, concurrency=1, warmup=2, seed=1),
    Scenario("chat-4u", dataset="sharegpt", output_len=64, num_prompts=8, concurrency=4, warmup=2, seed=1),
    # A 2k-token prefill takes ~15 s on these cores: two prompts, and no warmup that would cost another.
    Scenario(
        "prompt2k-1u", dataset="random", input_len=2000, output_len=32, num_prompts=2, concurrency=1, warmup=0, seed=1
    ),
]


@pytest.mark.llm_configs("cpu")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_serving(llm_server, bench, scenario, cpu_timing_noise, quality_noise):
    result = bench.run(scenario)
    m = result.metrics
    assert m["failed"] == 0, f"{m['failed']} of {scenario.num_prompts} requests failed: {result.errors}"
    bench.check("output_throughput", m["output_throughput"], noise=cpu_timing_noise)
    bench.check("median_ttft_ms", m["median_ttft_ms"], noise=cpu_timing_noise)
    bench.check("median_tpot_ms", m["median_tpot_ms"], noise=cpu_timing_noise)
    if "spec" in llm_server.config.marks:
        per_request = [r.spec.accept_length for r in result.records if r.spec and r.spec.accept_length]
        assert per_request, "a speculative config reported no accept length"
        bench.check("accept_length", per_request, noise=quality_noise)
