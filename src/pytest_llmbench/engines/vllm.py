"""vLLM's ``vllm serve``.

Facts used (vLLM v1 API server): the port refuses connections while the model loads, then /health
answers 200 (503 once the engine died); /reset_prefix_cache exists only with VLLM_SERVER_DEV_MODE=1
(404 otherwise); /metrics has the cumulative counters ``vllm:spec_decode_num_drafts_total``,
``…_num_draft_tokens_total`` and ``…_num_accepted_tokens_total`` (one series per engine/model label
set), so a window's mean accept length is 1 + accepted / drafts; requests must name the served model;
/tokenize takes ``{"prompt"}`` → ``{"tokens", "count", "max_model_len"}``, /detokenize → ``{"prompt"}``.
vLLM reports no per-request speculative stats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import httpx

from pytest_llmbench.engines.base import Engine, SpecStats, fetch_metrics, sum_series

if TYPE_CHECKING:
    from pytest_llmbench.config import ServerConfig

_DRAFTS = "vllm:spec_decode_num_drafts_total"
_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"

_LOG_FACTS: dict[str, tuple[re.Pattern[str], type]] = {
    "kv_cache_tokens": (re.compile(r"GPU KV cache size:\s*([\d,]+)\s*tokens"), int),
    "max_concurrency": (re.compile(r"Maximum concurrency for [\d,]+ tokens per request:\s*([\d.]+)x"), float),
    "gpu_blocks": (re.compile(r"# GPU blocks:\s*(\d+)"), int),
    "model_weights_gib": (re.compile(r"Model loading took ([\d.]+) GiB"), float),
}


class VLLMEngine(Engine):
    name = "vllm"
    reserved_flags = ("--host", "--port", "--model")
    docker_host_ipc = True
    # vllm/v1/metrics/loggers.py's names (V1 engine).
    metric_names: ClassVar[Mapping[str, tuple[str, Literal["gauge", "counter"]]]] = {
        "running_requests": ("vllm:num_requests_running", "gauge"),
        "queued_requests": ("vllm:num_requests_waiting", "gauge"),
        "kv_cache_usage": ("vllm:kv_cache_usage_perc", "gauge"),
        "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "counter"),
        "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "counter"),
        "preemptions": ("vllm:num_preemptions_total", "counter"),
        "prompt_tokens": ("vllm:prompt_tokens_total", "counter"),
        "generated_tokens": ("vllm:generation_tokens_total", "counter"),
        "spec_drafts": ("vllm:spec_decode_num_drafts_total", "counter"),
        "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens_total", "counter"),
        "spec_accepted_tokens": ("vllm:spec_decode_num_accepted_tokens_total", "counter"),
    }

    def command(self, cfg: ServerConfig, host: str, port: int) -> list[str]:
        binary = cfg.engine_options.get("binary") or "vllm"
        revision = ["--revision", cfg.model.revision] if cfg.model.revision else []
        return [
            str(binary),
            "serve",
            cfg.model.placeholder(),
            "--host",
            host,
            "--port",
            str(port),
            *cfg.args,
            *revision,
        ]

    def child_env(self, cfg: ServerConfig) -> dict[str, str]:
        # Dev mode exposes /reset_prefix_cache, which the scenarios use as SGLang's --flush-cache.
        # The server listens on 127.0.0.1 only; a config can opt out with engine_options.dev_mode: false.
        return {"VLLM_SERVER_DEV_MODE": "1"} if cfg.engine_options.get("dev_mode", True) else {}

    # ---- control plane ----------------------------------------------------------------------
    def flush_cache(self, client: httpx.Client) -> str | None:
        try:
            r = client.post("/reset_prefix_cache", timeout=60.0)
        except httpx.HTTPError as e:
            return f"cache not flushed: /reset_prefix_cache failed ({type(e).__name__})"
        if r.status_code == 200:
            return None
        if r.status_code == 404:
            return "cache not flushed: /reset_prefix_cache needs VLLM_SERVER_DEV_MODE=1"
        return f"cache not flushed: /reset_prefix_cache answered HTTP {r.status_code}"

    def tokenize(self, client: httpx.Client, text: str) -> list[int]:
        r = client.post("/tokenize", json={"prompt": text, "add_special_tokens": False}, timeout=60.0)
        if r.status_code == 404:
            raise NotImplementedError("this vLLM server has no /tokenize route")
        r.raise_for_status()
        return [int(t) for t in r.json()["tokens"]]

    def detokenize(self, client: httpx.Client, ids: list[int]) -> str:
        r = client.post("/detokenize", json={"tokens": ids}, timeout=60.0)
        if r.status_code == 404:
            raise NotImplementedError("this vLLM server has no /detokenize route")
        r.raise_for_status()
        return r.json()["prompt"]

    def server_info(self, client: httpx.Client) -> dict[str, Any]:
        info: dict[str, Any] = {}
        try:
            r = client.get("/version", timeout=10.0)
            if r.status_code == 200:
                info["version"] = r.json().get("version")
            r = client.get("/v1/models", timeout=10.0)
            if r.status_code == 200 and r.json().get("data"):
                m = r.json()["data"][0]
                info["model"] = m.get("id")
                info["max_model_len"] = m.get("max_model_len")
        except (httpx.HTTPError, ValueError):
            pass
        return info

    def server_facts(self, client: httpx.Client, log_text: str) -> dict[str, Any]:
        facts: dict[str, Any] = {}
        for key, (pattern, cast) in _LOG_FACTS.items():
            found = pattern.findall(log_text)
            if found:
                facts[key] = cast(found[-1].replace(",", ""))
        info = self.server_info(client)
        if info.get("max_model_len"):
            facts["max_model_len"] = info["max_model_len"]
        if info.get("version"):
            facts["vllm_version"] = info["version"]
        return facts

    # ---- requests ---------------------------------------------------------------------------
    def request_fields(self, cfg: ServerConfig) -> dict[str, Any]:
        return {"model": self.served_model_name(cfg)}  # vLLM answers 404 for any other model name

    def spec_counters(self, client: httpx.Client) -> dict[str, float] | None:
        metrics = fetch_metrics(client)
        if metrics is None:
            return None
        out = {name: sum_series(metrics, name) for name in (_DRAFTS, _DRAFT_TOKENS, _ACCEPTED)}
        return {k: v for k, v in out.items() if v is not None} or None

    def spec_from_counters(self, before: dict[str, float], after: dict[str, float]) -> SpecStats | None:
        if _DRAFTS not in after:
            return None
        drafts = after[_DRAFTS] - before.get(_DRAFTS, 0.0)
        if drafts <= 0:
            return None
        accepted = after.get(_ACCEPTED, 0.0) - before.get(_ACCEPTED, 0.0)
        drafted = after.get(_DRAFT_TOKENS, 0.0) - before.get(_DRAFT_TOKENS, 0.0)
        return SpecStats(
            1.0 + accepted / drafts,
            drafted=int(drafted),
            accepted=int(accepted),
            verify_steps=int(drafts),
            source="/metrics",
        )
