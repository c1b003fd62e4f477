"""The shared-prefix multi-turn scenario as a comparison bench (experiments/telemetry/prefix_cache_off.sh):
2 groups × 2 conversations × 3 turns on ~800-token system prompts, every block the 12 prompts in
conversation order at 1 user, so turn k can reuse turn k − 1's whole prefix (datasets/shared_prefix.py)."""

import pytest

from pytest_llmbench import Scenario
from pytest_llmbench.datasets.shared_prefix import shared_prefix_prompts

PROMPTS = shared_prefix_prompts(groups=2, conversations=2, turns=3, system_words=600, seed=1)
SC = Scenario(
    "shared-prefix",
    dataset="prompts",
    output_len=8,
    num_prompts=len(PROMPTS),
    concurrency=1,
    warmup=1,
    seed=1,
    scrape_interval_s=0.25,
)


@pytest.mark.llm_configs(names=["smol-nospec"])
def test_shared_prefix(llm_server, bench):
    result = bench.run(SC, prompts=PROMPTS)
    assert result.metrics["failed"] == 0, result.errors
    bench.check("median_ttft_ms", result.metrics["median_ttft_ms"])
    bench.check("median_tpot_ms", result.metrics["median_tpot_ms"])
