"""The scraper's mapping and counter arithmetic, driven by scripted /metrics texts (no server needed)."""

from __future__ import annotations

from pytest_llmbench.engines.base import parse_prometheus
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.engines.vllm import VLLMEngine
from pytest_llmbench.telemetry.scraper import Scraper, mapped
from pytest_llmbench.telemetry.timeline import VOCABULARY


def test_every_engine_maps_only_vocabulary_words():
    for engine in (LlamaCppEngine, SGLangEngine, VLLMEngine):
        assert engine.metric_names, engine.name
        assert set(engine.metric_names) <= set(VOCABULARY), engine.name
        assert all(
            prom.startswith(f"{engine.name.replace('llamacpp', 'llamacpp')}:") or ":" in prom
            for prom, _ in engine.metric_names.values()
        )


def test_labelled_series_are_summed_and_absent_ones_left_out():
    raw = parse_prometheus('vllm:num_requests_waiting{model="a"} 2\nvllm:num_requests_waiting{model="b"} 3\n')
    assert mapped(raw, VLLMEngine.metric_names) == {"queued_requests": (5.0, "gauge")}


def test_counters_become_rates_and_window_deltas():
    texts = iter(
        [
            "vllm:prefix_cache_queries_total 100\nvllm:prefix_cache_hits_total 10\nvllm:num_requests_running 1\n",
            "vllm:prefix_cache_queries_total 300\nvllm:prefix_cache_hits_total 60\nvllm:num_requests_running 3\n",
            None,
        ]
    )
    scraper = Scraper(
        lambda: (lambda t: None if t is None else parse_prometheus(t))(next(texts)), VLLMEngine.metric_names, 1.0
    )
    scraper.sample()
    scraper.sample()
    scraper.sample()  # a failed scrape counts, and adds a row with only its time
    tl = scraper.timeline
    assert tl.errors == 1 and len(tl.samples) == 3
    assert "prefix_cache_queries" not in tl.samples[0] and tl.samples[1]["prefix_cache_queries"] > 0
    s = tl.summary()
    assert s["prefix_cache_queries_total"] == 200 and s["prefix_cache_hits_total"] == 50
    assert s["prefix_hit_rate"] == 0.25  # hits over queries of the window, not a mean of rates
    assert s["running_requests"] == 2.0 and s["running_requests_max"] == 3.0


def test_a_zero_interval_reads_nothing():
    calls = []
    with Scraper(lambda: calls.append(1), {}, 0.0) as s:
        pass
    assert calls == [] and s.timeline.samples == []


def test_llamacpp_cached_tokens_from_its_final_timings():
    e = LlamaCppEngine()
    assert e.cached_tokens({"timings": {"cache_n": 30, "prompt_n": 10}}) == (30, 40)
    assert e.cached_tokens({"usage": {"prompt_tokens": 8, "prompt_tokens_details": {"cached_tokens": 4}}}) == (4, 8)
    assert e.cached_tokens({}) is None
