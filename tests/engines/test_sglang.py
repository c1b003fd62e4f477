"""The SGLang adapter against a protocol double of SGLang's HTTP server (tests/engines/protocol_double.py).

The double reproduces SGLang's documented endpoints and formats (health 503→200, /server_info with
internal_states, /flush_cache's 400 while busy, /tokenize, meta_info in streamed chat choices,
/metrics); the end-to-end test launches it exactly as SGLang is launched (``python -m
sglang.launch_server --model-path … --host … --port …``) through the real subprocess launcher,
``start_server`` and the serving workload.
"""

from __future__ import annotations

import dataclasses
import sys

import httpx
import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine, parse_log_facts
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.scenario import Scenario, run_scenario
from tests.engines.adapter_helpers import gone, make_config
from tests.engines.protocol_double import Double


@pytest.fixture
def double():
    d = Double("sglang")
    port = d.serve()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        yield d, client
    d.close()


def test_end_to_end_through_launcher_and_workload(tmp_path, fake_sglang):
    cfg = make_config(
        "sglang",
        model="RadixArk/Qwen3.8-27B-NVFP4",
        env=fake_sglang,
        engine_options={"python": sys.executable},
        args=["--mem-fraction-static", "0.41"],
    )
    server = start_server(cfg, tmp_path / cfg.name, poll_interval=0.05)
    try:
        log = server.log_path.read_text()
        assert (
            "launch_server.py --model-path RadixArk/Qwen3.8-27B-NVFP4 --host 127.0.0.1 "
            f"--port {server.port} --mem-fraction-static 0.41" in log
        )
        assert server.info["max_total_num_tokens"] == 236864
        assert server.info["api_key"] == "***", "secrets in /server_info must not reach results"

        sc = Scenario(
            "chat",
            dataset="random",
            input_len=40,
            output_len=10,
            num_prompts=3,
            concurrency=2,
            warmup=1,
            extra_body={"reasoning_effort": "medium", "chat_template_kwargs": {"x": 1}},
        )
        result = run_scenario(server, sc)
        assert [r.ok for r in result.records] == [True] * 3, result.errors
        assert all(r.prompt_tokens == 40 for r in result.records)  # exact length via the double's /tokenize
        # 10 tokens in steps of 3,3,3,1: meta_info says 4 verify steps → 2.5 tokens per step.
        assert [r.spec.accept_length for r in result.records] == [2.5] * 3
        assert {r.spec.source for r in result.records} == {"meta_info"}
        assert result.spec_server is not None and result.spec_server.accept_length == pytest.approx(2.5)
        assert result.notes == [], "the flush retried through SGLang's 400 and succeeded"
        facts = server.facts()
        assert facts["max_total_num_tokens"] == 236864 and facts["max_mamba_cache_size"] == 28
        assert facts["kv_cache_tokens"] == 236864 and facts["context_len"] == 153600
        assert facts["available_gpu_mem_gb"] == 12.34
        pids = server.handle.pids()
    finally:
        server.stop(grace=5)
    assert pids and gone(pids)


def test_request_fields_pass_extra_body_through(double):
    _d, _client = double
    cfg = make_config("sglang", model="org/m", args=["--served-model-name", "served"])
    fields = SGLangEngine().request_fields(cfg)
    assert fields == {"model": "served", "return_meta_info": True}


def test_request_spec_from_meta_info():
    e = SGLangEngine()
    meta = {
        "completion_tokens": 12,
        "spec_verify_ct": 4,
        "spec_accept_length": 3.0,
        "spec_accept_token_num": 8,
        "spec_draft_token_num": 28,
    }
    s = e.request_spec({"meta_info": meta}, 12)
    assert (s.accept_length, s.verify_steps, s.accepted, s.drafted) == (3.0, 4, 8, 28)
    # Older builds send only the verify count: accept length = completion tokens / verify steps.
    s = e.request_spec({"meta_info": {"spec_verify_ct": 5}}, 15)
    assert s.accept_length == 3.0
    assert e.request_spec({"meta_info": {"completion_tokens": 9}}, 9) is None
    assert e.request_spec({}, 9) is None


def test_flush_retries_400_then_succeeds(double):
    d, client = double
    d.flush_400 = 3
    e = SGLangEngine()
    e.flush_retry_s = 0.01  # the retries, not SGLang's pace, are under test
    assert e.flush_cache(client) is None
    assert d.flushes == 1 and d.flush_400 == 0


def test_flush_gives_a_note_when_server_stays_busy(double):
    d, client = double
    d.flush_400 = 10**6
    e = SGLangEngine()
    e.flush_timeout_s, e.flush_retry_s = 0.3, 0.01
    note = e.flush_cache(client)
    assert note and "cache not flushed" in note and "400" in note


def test_is_ready_503_then_200(double):
    _d, client = double
    e = SGLangEngine()
    assert [e.is_ready(client) for _ in range(3)] == [False, False, True]


def test_old_build_falls_back_to_get_server_info_and_has_no_tokenize(double):
    d, client = double
    d.old_routes = True
    e = SGLangEngine()
    assert e.server_info(client)["max_total_num_tokens"] == 236864
    with pytest.raises(NotImplementedError, match="no /tokenize"):
        e.tokenize(client, "hello")


def test_tokenize_roundtrip(double):
    _d, client = double
    e = SGLangEngine()
    ids = e.tokenize(client, "héllo")
    assert ids == [ord(c) for c in "héllo"] and e.detokenize(client, ids) == "héllo"


def test_server_level_accept_length_after_flush(double):
    d, client = double
    e = SGLangEngine()
    d.account(d.steps(10))  # 3,3,3,1 → 2.5
    after = e.spec_counters(client)
    assert after["avg_spec_accept_length"] == pytest.approx(2.5)
    assert after["sglang:spec_accept_length"] == pytest.approx(2.5)
    s = e.spec_from_counters({}, after)
    assert s.accept_length == pytest.approx(2.5) and "server_info" in s.source
    # The /metrics gauge is the fallback when /server_info has no average.
    assert e.spec_from_counters({}, {"sglang:spec_accept_length": 3.1}).accept_length == 3.1


def test_no_drafter_means_no_server_accept_length(double):
    d, client = double
    d.spec = False
    d.account(d.steps(10))
    assert SGLangEngine().spec_counters(client) is None


def test_log_facts_take_the_last_start():
    text = (
        "max_total_num_tokens=100, context_len=10, available_gpu_mem=1.5 GB\n"
        "max_total_num_tokens=236864, chunked_prefill_size=2048, max_running_requests=4, context_len=153600, "
        "available_gpu_mem=12.34 GB\nMamba Cache is allocated. max_mamba_cache_size: 7, x\n"
    )
    assert parse_log_facts(text) == {
        "max_total_num_tokens": 236864,
        "chunked_prefill_size": 2048,
        "max_running_requests": 4,
        "context_len": 153600,
        "available_gpu_mem_gb": 12.34,
        "max_mamba_cache_size": 7,
    }


def test_command_and_validation():
    cfg = make_config("sglang", model="org/m", launcher="docker", image="img", args=["--tp", "1"])
    assert SGLangEngine().command(cfg, "0.0.0.0", 30000) == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "org/m",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--tp",
        "1",
    ]
    bad = make_config("sglang", args=["--port", "1"])
    assert SGLangEngine.validate(bad)[0] == "args"


def test_pinned_target_and_drafter_revisions_reach_the_command():
    """The posts pin the target (@319f741c) and DFlash2 (@50307d4c); SGLang takes both as flags."""
    from pytest_llmbench.models import ModelRef

    draft = ModelRef("hub", "z-lab/Qwen3.8-27B-DFlash2@50307d4c", revision="50307d4c")
    cfg = make_config(
        "sglang",
        model="RadixArk/Qwen3.8-27B-NVFP4",
        launcher="docker",
        image="img",
        args=["--speculative-draft-model-path", "z-lab/Qwen3.8-27B-DFlash2"],
    )
    cfg = dataclasses.replace(
        cfg,
        model=ModelRef("hub", "RadixArk/Qwen3.8-27B-NVFP4@319f741c", revision="319f741c"),
        models={"dflash2": draft},
    )
    cmd = SGLangEngine().command(cfg, "0.0.0.0", 30000)
    assert cmd[4] == "RadixArk/Qwen3.8-27B-NVFP4"
    assert cmd[-4:] == ["--revision", "319f741c", "--speculative-draft-model-revision", "50307d4c"]
    unpinned = make_config("sglang", model="org/m", launcher="docker", image="img")
    assert "--revision" not in SGLangEngine().command(unpinned, "h", 1)


def test_revision_through_the_launcher_to_the_protocol_double(tmp_path, fake_sglang):
    """Protocol double: the launched server sees --revision and still answers to the plain id."""
    from pytest_llmbench.models import ModelRef

    cfg = make_config("sglang", env=fake_sglang, engine_options={"python": sys.executable})
    cfg = dataclasses.replace(cfg, model=ModelRef("hub", "RadixArk/Qwen3.8-27B-NVFP4@319f741c", revision="319f741c"))
    server = start_server(cfg, tmp_path / cfg.name, poll_interval=0.05)
    try:
        assert "--model-path RadixArk/Qwen3.8-27B-NVFP4 " in server.log_path.read_text()
        assert "--revision 319f741c" in server.log_path.read_text()
        result = run_scenario(
            server, Scenario("chat", dataset="random", input_len=20, output_len=4, num_prompts=1, warmup=0)
        )
        assert result.records[0].ok, result.errors
    finally:
        server.stop(grace=5)


def test_sglang_prefill_log_lines_give_the_pass_share():
    log = (
        "[2026-10-30 10:00:01] Prefill batch. #new-seq: 1, #new-token: 760, #cached-token: 40, token usage: 0.01\n"
        "[2026-10-30 10:00:01] Decode batch. #running-req: 1, #token: 900\n"
        "[2026-10-30 10:00:02] Prefill batch. #new-seq: 1, #new-token: 200, #cached-token: 600, token usage: 0.02\n"
    )
    assert SGLangEngine().log_cached_share(log) == pytest.approx(640 / 1600)
    assert SGLangEngine().log_cached_share("Decode batch. #running-req: 1") is None
    assert LlamaCppEngine().log_cached_share(log) is None  # an engine whose log does not say
