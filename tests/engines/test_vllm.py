"""The vLLM adapter against a protocol double of vLLM's OpenAI server (tests/engines/protocol_double.py).

The double reproduces vLLM's documented behaviour the adapter relies on: the port refuses connections
while loading, /reset_prefix_cache only with VLLM_SERVER_DEV_MODE=1, cumulative
``vllm:spec_decode_*_total`` counters per label set on /metrics, /tokenize → tokens, /detokenize →
prompt, and a 404 for requests naming a model it does not serve. The end-to-end test launches it as
``vllm serve MODEL --host … --port …`` through the real subprocess launcher and serving workload.
"""

from __future__ import annotations

import httpx
import pytest

from pytest_llmbench.engines.vllm import VLLMEngine
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.scenario import Scenario, run_scenario
from tests.engines.adapter_helpers import gone, make_config
from tests.engines.protocol_double import Double


@pytest.fixture
def double():
    d = Double("vllm", model="org/model", dev_mode=True)
    port = d.serve()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        yield d, client
    d.close()


def test_end_to_end_through_launcher_and_workload(tmp_path, fake_vllm):
    cfg = make_config(
        "vllm", model="Qwen/Qwen3-8B", engine_options={"binary": fake_vllm}, args=["--load-seconds", "1.0"]
    )
    server = start_server(cfg, tmp_path / cfg.name, poll_interval=0.05)
    try:
        assert server.startup_s >= 1.0, "connection refused while loading must read as not ready"
        log = server.log_path.read_text()
        assert f"serve Qwen/Qwen3-8B --host 127.0.0.1 --port {server.port} --load-seconds 1.0" in log
        sc = Scenario("chat", dataset="random", input_len=30, output_len=9, num_prompts=4, concurrency=2, warmup=1)
        result = run_scenario(server, sc)
        # The double 404s any other model name: every request ok means the served name was sent.
        assert [r.ok for r in result.records] == [True] * 4, result.errors
        assert result.notes == [], "dev mode is on by default, so the prefix cache was reset"
        # 9 tokens in steps of 3 per request: 3 drafts, 6 accepted → 1 + 6/3 = 3.0 over the window
        # (the warmup's counts are excluded by the before/after snapshot).
        s = result.spec_server
        assert (s.accept_length, s.verify_steps, s.accepted, s.drafted) == (3.0, 12, 24, 24)
        assert result.metrics.get("accept_length") == pytest.approx(3.0)
        facts = server.facts()
        assert facts["kv_cache_tokens"] == 412896 and facts["max_concurrency"] == 12.6
        assert facts["max_model_len"] == 32768
        pids = server.handle.pids()
    finally:
        server.stop(grace=5)
    assert pids and gone(pids)


def test_dev_mode_env_and_opt_out():
    assert VLLMEngine().child_env(make_config("vllm")) == {"VLLM_SERVER_DEV_MODE": "1"}
    assert VLLMEngine().child_env(make_config("vllm", engine_options={"dev_mode": False})) == {}


def test_flush_without_dev_mode_is_a_note(double):
    d, client = double
    d.dev_mode = False
    note = VLLMEngine().flush_cache(client)
    assert note and "cache not flushed" in note and "VLLM_SERVER_DEV_MODE" in note
    d.dev_mode = True
    assert VLLMEngine().flush_cache(client) is None and d.flushes == 1


def test_spec_counters_sum_label_sets(double):
    d, client = double
    e = VLLMEngine()
    before = e.spec_counters(client)
    d.account(d.steps(9))  # 3 drafts of 3 tokens: 6 accepted, 6 draft tokens
    d.account(d.steps(7))  # 3,3,1: 3 drafts, 4 accepted
    after = e.spec_counters(client)
    s = e.spec_from_counters(before, after)
    assert (s.verify_steps, s.accepted, s.drafted) == (6, 10, 12)
    assert s.accept_length == pytest.approx(1 + 10 / 6)
    assert e.spec_from_counters(after, after) is None, "no drafts in the window: no accept length"


def test_no_spec_metrics_means_none():
    assert VLLMEngine().spec_from_counters({}, {}) is None


def test_tokenize_and_served_name(double):
    _d, client = double
    e = VLLMEngine()
    assert e.detokenize(client, e.tokenize(client, "abc")) == "abc"
    cfg = make_config("vllm", model="org/m", args=["--served-model-name", "x"])
    assert e.request_fields(cfg) == {"model": "x"}
    assert e.request_fields(make_config("vllm", model="org/m")) == {"model": "org/m"}


def test_not_ready_when_refused():
    e = VLLMEngine()
    with httpx.Client(base_url="http://127.0.0.1:9", timeout=1) as client:
        assert e.is_ready(client) is False


def test_pinned_revision_is_passed_to_vllm_serve():
    import dataclasses

    from pytest_llmbench.models import ModelRef

    cfg = dataclasses.replace(make_config("vllm"), model=ModelRef("hub", "Qwen/Qwen3-8B@abc123", revision="abc123"))
    cmd = VLLMEngine().command(cfg, "127.0.0.1", 8000)
    assert cmd[:3] == ["vllm", "serve", "Qwen/Qwen3-8B"] and cmd[-2:] == ["--revision", "abc123"]
    assert "--revision" not in VLLMEngine().command(make_config("vllm"), "127.0.0.1", 8000)
