"""SGLang's ``sglang.launch_server``: the engine the posts' GPU numbers come from.

Facts used (SGLang http_server, nightly 2026-10): /health is 503 while starting and, once up, runs a
one-token generation that can take up to SGLANG_HEALTH_CHECK_TIMEOUT (20 s) — so one poll may take
that long; /flush_cache answers 400 while requests are running or waiting; /server_info (older
builds: /get_server_info) returns every server arg, the scheduler info (max_total_num_tokens …) and
``internal_states[i].avg_spec_accept_length``, a running average since the last flush; chat requests
with ``return_meta_info`` carry ``meta_info`` (spec_verify_ct, spec_accept_length …) in the response
choices; /tokenize takes ``{"prompt"}`` and returns ``{"tokens", "count", "max_model_len"}``,
/detokenize returns ``{"text"}``. The benchmark posts read KV pool and mamba slots from the server log, so
:meth:`server_facts` parses the same lines.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import httpx

from pytest_llmbench import redact
from pytest_llmbench.engines.base import Engine, SpecStats, fetch_metrics, flag_value, sum_series

if TYPE_CHECKING:
    from pytest_llmbench.config import ServerConfig


# Log lines the benchmark posts read by hand; the last occurrence wins (a log may hold several starts).
_LOG_FACTS: dict[str, tuple[re.Pattern[str], type]] = {
    "max_total_num_tokens": (re.compile(r"max_total_num_tokens=(\d+)"), int),
    "chunked_prefill_size": (re.compile(r"chunked_prefill_size=(-?\d+)"), int),
    "max_running_requests": (re.compile(r"max_running_requests=(\d+)"), int),
    "context_len": (re.compile(r"context_len=(\d+)"), int),
    "available_gpu_mem_gb": (re.compile(r"available_gpu_mem=([\d.]+)\s*GB"), float),
    "max_mamba_cache_size": (re.compile(r"max_mamba_cache_size:\s*(\d+)"), int),
    "kv_cache_tokens": (re.compile(r"KV Cache is allocated\. #tokens:\s*(\d+)"), int),
}


_PREFILL = re.compile(r"Prefill batch.*?#new-token:\s*(\d+),\s*#cached-token:\s*(\d+)")


def parse_cached_share(log_text: str) -> float | None:
    """Cached share from SGLang's ``Prefill batch. … #new-token: N, #cached-token: C`` log lines (the
    decision routes return no usage, so the decisions post read its 5% / 68–76% from this log)."""
    new = cached = 0
    for m in _PREFILL.finditer(log_text):
        new += int(m.group(1))
        cached += int(m.group(2))
    return cached / (new + cached) if new + cached else None


def parse_log_facts(log_text: str) -> dict[str, Any]:
    """The sizes SGLang logs at startup (KV pool, mamba slots, context, free memory)."""
    out: dict[str, Any] = {}
    for key, (pattern, cast) in _LOG_FACTS.items():
        found = pattern.findall(log_text)
        if found:
            out[key] = cast(found[-1])
    return out


class SGLangEngine(Engine):
    name = "sglang"
    reserved_flags = ("--model-path", "--model", "--host", "--port")
    decision_route = "/v1/systemone"
    docker_host_ipc = True
    # ``--enable-metrics``: python/sglang/srt/metrics/collector.py's names.
    metric_names: ClassVar[Mapping[str, tuple[str, Literal["gauge", "counter"]]]] = {
        "running_requests": ("sglang:num_running_reqs", "gauge"),
        "queued_requests": ("sglang:num_queue_reqs", "gauge"),
        "kv_cache_usage": ("sglang:token_usage", "gauge"),
        "cache_hit_rate": ("sglang:cache_hit_rate", "gauge"),
        "retracted_requests": ("sglang:num_retracted_reqs", "gauge"),
        "gen_throughput": ("sglang:gen_throughput", "gauge"),
        "spec_accept_length": ("sglang:spec_accept_length", "gauge"),
        "prompt_tokens": ("sglang:prompt_tokens_total", "counter"),
        "generated_tokens": ("sglang:generation_tokens_total", "counter"),
        "prefix_cache_hits": ("sglang:cached_tokens_total", "counter"),
    }
    health_timeout_s = 30.0
    flush_timeout_s = 60.0
    #: The wait between /flush_cache tries while SGLang answers 400 (requests still running); a test sets it small.
    flush_retry_s = 0.5

    def command(self, cfg: ServerConfig, host: str, port: int) -> list[str]:
        python = cfg.engine_options.get("python") or ("python3" if cfg.launcher == "docker" else sys.executable)
        return [
            str(python),
            "-m",
            "sglang.launch_server",
            "--model-path",
            cfg.model.placeholder(),
            "--host",
            host,
            "--port",
            str(port),
            *cfg.args,
            *self.revision_flags(cfg),
        ]

    @staticmethod
    def revision_flags(cfg: ServerConfig) -> list[str]:
        """``--revision`` for a pinned target, ``--speculative-draft-model-revision`` for a pinned drafter
        (the config's ``models`` entry whose id follows ``--speculative-draft-model-path``)."""
        out = ["--revision", cfg.model.revision] if cfg.model.revision else []
        draft = flag_value(cfg.args, "--speculative-draft-model-path")
        pinned = [
            m.revision for m in cfg.models.values() if m.kind == "hub" and m.revision and m.placeholder() == draft
        ]
        if draft and pinned:
            out += ["--speculative-draft-model-revision", pinned[0]]
        return out

    # ---- readiness and control plane --------------------------------------------------------
    def is_ready(self, client: httpx.Client) -> bool:
        # /health generates one token once the server is up; give it longer than SGLang's own 20 s.
        try:
            r = client.get(self.health_path, timeout=self.health_timeout_s)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    def flush_cache(self, client: httpx.Client) -> str | None:
        """POST /flush_cache; a 400 means requests are still running, so retry until the timeout."""
        deadline = time.monotonic() + self.flush_timeout_s
        last = ""
        while True:
            try:
                r = client.post("/flush_cache", timeout=30.0)
                if r.status_code == 200:
                    return None
                last = f"HTTP {r.status_code}"
                if r.status_code != 400:
                    break
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}: {e}"
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(self.flush_retry_s)
        return f"cache not flushed: /flush_cache answered {last} (requests still running?)"

    def _get_json(self, client: httpx.Client, *paths: str) -> dict[str, Any]:
        for path in paths:
            try:
                r = client.get(path, timeout=30.0)
            except httpx.HTTPError:
                return {}
            if r.status_code == 404:
                continue
            try:
                return r.json() if r.status_code == 200 else {}
            except ValueError:
                return {}
        return {}

    def server_info(self, client: httpx.Client) -> dict[str, Any]:
        return redact.mapping(self._get_json(client, "/server_info", "/get_server_info"))

    def server_facts(self, client: httpx.Client, log_text: str) -> dict[str, Any]:
        facts = parse_log_facts(log_text)
        info = self.server_info(client)
        for key in ("max_total_num_tokens", "max_running_requests", "context_len", "max_req_input_len"):
            if key not in facts and isinstance(info.get(key), (int, float)):
                facts[key] = info[key]
        if info.get("version"):
            facts["sglang_version"] = info["version"]
        return facts

    def log_cached_share(self, log_text: str) -> float | None:
        return parse_cached_share(log_text)

    def tokenize(self, client: httpx.Client, text: str) -> list[int]:
        for path in ("/tokenize", "/v1/tokenize"):
            r = client.post(path, json={"prompt": text, "add_special_tokens": False}, timeout=60.0)
            if r.status_code == 404:
                continue
            r.raise_for_status()
            return [int(t) for t in r.json()["tokens"]]
        raise NotImplementedError(
            "this SGLang server has no /tokenize route (older build); exact-length "
            "prompts need it — use a newer image or dataset 'sharegpt'"
        )

    def detokenize(self, client: httpx.Client, ids: list[int]) -> str:
        for path in ("/detokenize", "/v1/detokenize"):
            r = client.post(path, json={"tokens": ids}, timeout=60.0)
            if r.status_code == 404:
                continue
            r.raise_for_status()
            return r.json()["text"]
        raise NotImplementedError("this SGLang server has no /detokenize route (older build)")

    # ---- requests ---------------------------------------------------------------------------
    def request_fields(self, cfg: ServerConfig) -> dict[str, Any]:
        # reasoning_effort / chat_template_kwargs come from the scenario's extra_body untouched.
        return {"model": self.served_model_name(cfg), "return_meta_info": True}

    def request_spec(self, final: dict[str, Any], completion_tokens: int | None) -> SpecStats | None:
        meta = final.get("meta_info") or {}
        verify = meta.get("spec_verify_ct")
        length = meta.get("spec_accept_length")
        if not verify and length is None:
            return None
        produced = meta.get("completion_tokens", completion_tokens)
        if length is None and verify and produced:
            length = produced / verify
        drafted, accepted = meta.get("spec_draft_token_num"), meta.get("spec_accept_token_num")
        return SpecStats(
            accept_length=float(length) if length is not None else None,
            drafted=int(drafted) if drafted is not None else None,
            accepted=int(accepted) if accepted is not None else None,
            verify_steps=int(verify) if verify else None,
            source="meta_info",
        )

    def spec_counters(self, client: httpx.Client) -> dict[str, float] | None:
        """SGLang keeps a running average since the last flush, not counters: snapshot the average."""
        out: dict[str, float] = {}
        info = self._get_json(client, "/server_info", "/get_server_info")
        if "speculative_algorithm" in info and not info["speculative_algorithm"]:
            return None  # no drafter: any average it reports is not an accept length
        states = info.get("internal_states") or []
        if states and isinstance(states[0], dict) and isinstance(states[0].get("avg_spec_accept_length"), (int, float)):
            out["avg_spec_accept_length"] = float(states[0]["avg_spec_accept_length"])
        gauge = sum_series(fetch_metrics(client) or {}, "sglang:spec_accept_length")
        if gauge is not None:
            out["sglang:spec_accept_length"] = gauge
        return out or None

    def spec_from_counters(self, before: dict[str, float], after: dict[str, float]) -> SpecStats | None:
        # The scenario flushes first, so the average after the run covers the run (warmups excluded).
        for key, source in (
            ("avg_spec_accept_length", "/server_info avg since flush"),
            ("sglang:spec_accept_length", "/metrics gauge"),
        ):
            value = after.get(key)
            if value is not None and value > 0:
                return SpecStats(accept_length=value, source=source)
        return None
