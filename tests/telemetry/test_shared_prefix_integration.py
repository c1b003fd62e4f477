"""The shared-prefix multi-turn scenario on a real llama-server (SmolLM2, cpu.yaml's smol-nospec): its
prefix cache serves most prompt tokens, and ``--no-cache-prompt`` (the setting the issue-59 candidate uses)
switches that reuse off, as each response's ``timings.cache_n`` says. Token counts, not timings."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_llmbench import Scenario
from pytest_llmbench.datasets.shared_prefix import shared_prefix_prompts
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.scenario import run_scenario

pytestmark = pytest.mark.integration

PROMPTS = shared_prefix_prompts(groups=2, conversations=2, turns=2, system_words=300, seed=2)
SC = Scenario(
    "gsp", dataset="prompts", output_len=4, num_prompts=len(PROMPTS), concurrency=1, warmup=1, scrape_interval_s=0.2
)


def _run(cfg, folder):
    server = start_server(cfg, folder)
    try:
        return run_scenario(server, SC, prompts=PROMPTS)
    finally:
        server.stop()


def test_the_prefix_cache_serves_the_shared_prefix_and_no_cache_prompt_switches_it_off(cpu_configs, tmp_path):
    cfg = cpu_configs["smol-nospec"]
    on = _run(cfg, tmp_path / "on")
    assert on.metrics["failed"] == 0, on.errors
    cached = [r.final["timings"]["cache_n"] for r in on.records]
    # per group: conversation 1 turn 0 is cold (flushed), its turn 1 reuses turn 0; conversation 2 reuses the
    # system prompt, and its turn 1 all of turn 0; group 2's system prompt differs from its first words on
    assert cached[0] == 0 and all(c > 300 for c in cached[1:4]), cached
    assert on.metrics["prefix_cache_hit_rate"] > 0.6, on.metrics
    assert on.telemetry is not None and on.telemetry.summary()["prompt_tokens_total"] > 0

    off = _run(replace(cfg, args=(*cfg.args, "--no-cache-prompt")), tmp_path / "off")
    assert off.metrics["failed"] == 0, off.errors
    assert [r.final["timings"]["cache_n"] for r in off.records] == [0] * len(PROMPTS)
    assert off.metrics["prefix_cache_hit_rate"] == 0.0
    # the server computed every prompt token afresh: more than with its cache on
    assert off.telemetry.summary()["prompt_tokens_total"] > 2 * on.telemetry.summary()["prompt_tokens_total"]
