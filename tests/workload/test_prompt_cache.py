"""Share of prompt tokens served from the prefix cache: each engine's way of saying it, and llama.cpp's
``cache_prompt: false`` (the Flash-Next post's protocol) checked against a real llama-server."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.prompt_cache import LogWindow, cached_prompt_tokens, cached_share
from pytest_llmbench.workload.requests import run_requests


def test_llamacpp_timings_count_reused_and_processed_tokens():
    assert cached_prompt_tokens({"timings": {"cache_n": 30, "prompt_n": 10}}) == (30, 40)


def test_openai_usage_details_and_sglang_meta_info():
    usage = {"usage": {"prompt_tokens": 800, "prompt_tokens_details": {"cached_tokens": 40}}}
    assert cached_prompt_tokens(usage) == (40, 800)
    assert cached_prompt_tokens({"meta_info": {"prompt_tokens": 100, "cached_tokens": 64}}) == (64, 100)


def test_a_response_that_says_nothing_is_left_out_not_counted_as_zero():
    assert cached_prompt_tokens({"usage": {"prompt_tokens": 10}}) is None
    finals = [{"timings": {"cache_n": 0, "prompt_n": 100}}, {}, {"timings": {"cache_n": 100, "prompt_n": 0}}]
    assert cached_share(finals) == pytest.approx(0.5)
    assert cached_share([{}, {"usage": {}}]) is None


def test_log_window_reads_only_what_was_written_after_it_opened(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("Prefill batch. #new-seq: 1, #new-token: 10, #cached-token: 90\n")
    window = LogWindow(log)
    with open(log, "a") as f:
        f.write("Prefill batch. #new-seq: 1, #new-token: 100, #cached-token: 0\n")
    assert SGLangEngine().log_cached_share(window.text()) == 0.0
    assert LogWindow(tmp_path / "absent.log").text() == ""


def _same_prompt_twice(server):
    body = {
        "messages": [{"role": "user", "content": "List three colours of the rainbow, then three fruits."}],
        "max_tokens": 4,
        "temperature": 0.0,
    }
    server.flush_cache()
    return run_requests(server, [body, body], concurrency=1)


@pytest.mark.integration
def test_cache_prompt_false_on_every_request_keeps_llamacpp_cold(smol_server, cpu_configs, tmp_path):
    """Control first: by default the second identical prompt reuses the slot's prefix. With the config's
    ``request: {cache_prompt: false}`` (as llamacpp-flash-next-gguf.yaml sets) it reuses nothing."""
    warm = _same_prompt_twice(smol_server)
    assert all(r.ok for r in warm), [r.error for r in warm]
    assert cached_prompt_tokens(warm[1].final)[0] > 0
    cfg = dataclasses.replace(cpu_configs["smol-nospec"], name="smol-uncached", request={"cache_prompt": False})
    server = start_server(cfg, tmp_path / "uncached")
    try:
        cold = _same_prompt_twice(server)
    finally:
        server.stop()
    assert all(r.ok for r in cold), [r.error for r in cold]
    assert [cached_prompt_tokens(r.final)[0] for r in cold] == [0, 0]
    assert cached_share(r.final for r in cold) == 0.0
