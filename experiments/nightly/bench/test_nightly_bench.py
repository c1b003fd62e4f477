"""The nightly campaign's bench: one decode scenario on SmolLM2 through the docker launcher, its TPOT and
throughput compared between the reference image and tonight's (experiments/nightly/campaign.py)."""

from pytest_llmbench import Scenario

SC = Scenario("decode", dataset="random", input_len=16, output_len=32, num_prompts=4, concurrency=1, warmup=0, seed=1)


def test_decode(llm_server, bench):
    result = bench.run(SC)
    assert result.metrics["failed"] == 0, result.errors
    bench.check("mean_tpot_ms", result.metrics["mean_tpot_ms"])
    bench.check("output_throughput", result.metrics["output_throughput"])
