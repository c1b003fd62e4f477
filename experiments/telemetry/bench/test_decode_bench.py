"""A short decode scenario for the busy-neighbour session (experiments/telemetry/busy_neighbour.sh)."""

import pytest

from pytest_llmbench import Scenario

SC = Scenario(
    "decode",
    dataset="random",
    input_len=16,
    output_len=32,
    num_prompts=2,
    concurrency=1,
    warmup=1,
    seed=1,
    scrape_interval_s=0.25,
)


@pytest.mark.llm_configs(names=["smol-nospec"])
def test_decode(llm_server, bench):
    result = bench.run(SC)
    assert result.metrics["failed"] == 0, result.errors
    bench.check("median_tpot_ms", result.metrics["median_tpot_ms"])
