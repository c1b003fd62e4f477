"""Per-request records: what one streamed chat or completions request measured, built from its
timestamped events."""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_llmbench.engines.base import SpecStats
from pytest_llmbench.transport.http import RawResponse, StreamError
from pytest_llmbench.transport.sse import parse_sse_columns

if TYPE_CHECKING:
    from pytest_llmbench.engines.base import Engine


@dataclass
class RequestRecord:
    """One request. Times are seconds; ``chunk_times`` are since the request was sent.

    ``chunk_tokens[i]`` is how many tokens chunk i carried (from the server's cumulative counters
    when it streams them, else 1 per content chunk) so ITL stays per token under speculative decoding.
    """

    index: int
    ok: bool = False
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int = 0
    ttft_s: float | None = None
    e2e_s: float | None = None
    started_at: float = 0.0
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    text: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    spec: SpecStats | None = None
    final: dict[str, Any] = field(default_factory=dict)
    # Open-loop runs only: when the schedule said to send it (s from the run's start), and how late the
    # client actually sent it (the load generator's lag, not the server's queueing).
    scheduled_s: float | None = None
    send_lag_s: float | None = None

    @property
    def tpot_s(self) -> float | None:
        """(E2E − TTFT) / (n − 1), sglang bench_serving's definition; None below 2 tokens."""
        if not self.ok or self.ttft_s is None or self.e2e_s is None or self.completion_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.completion_tokens - 1)

    def itls_s(self) -> list[float]:
        """Inter-token latencies: each gap between content chunks, divided over the tokens it carried."""
        out: list[float] = []
        for i in range(1, len(self.chunk_times)):
            k = max(self.chunk_tokens[i], 1)
            gap = (self.chunk_times[i] - self.chunk_times[i - 1]) / k
            out.extend([gap] * k)
        return out


MAX_TOOL_CALL_GAP = 64


def _tool_call_merge(acc: list[dict[str, Any]], deltas: list[dict[str, Any]]) -> None:
    """Accumulate OpenAI streamed tool-call deltas (name once, arguments in pieces) by index."""
    for d in deltas:
        idx = d.get("index", len(acc))
        if not 0 <= idx <= len(acc) + MAX_TOOL_CALL_GAP:  # a wild index must not allocate millions of slots
            raise ValueError(f"tool-call index {idx} out of range")
        while len(acc) <= idx:
            acc.append({"name": "", "arguments": ""})
        fn = d.get("function") or {}
        if fn.get("name"):
            acc[idx]["name"] += fn["name"]
        if fn.get("arguments"):
            acc[idx]["arguments"] += fn["arguments"]
        if d.get("id"):
            acc[idx]["id"] = d["id"]


def record_from_response(index: int, raw: RawResponse, engine: Engine) -> RequestRecord:
    """Turn a finished raw response into a record; any protocol problem becomes ``error``."""
    rec = RequestRecord(index=index, started_at=raw.t_start, e2e_s=raw.t_end - raw.t_start)
    if raw.status != 200:
        body = b"".join(raw.chunks)[:300].decode("utf-8", "replace")
        rec.error = f"HTTP {raw.status}: {body.strip()}"
        return rec
    # The parsed events are acyclic and dropped before this returns, so the cyclic GC has nothing to find
    # in them; left on, it would run several young collections per 512-event stream (measured: ~20% of
    # the client's CPU at 256 streams, experiments/client/client_overhead.py).
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        try:
            times, datas = parse_sse_columns(raw.times, raw.chunks)
        except StreamError as e:
            rec.error = str(e)
            return rec
        try:
            return fill_from_columns(rec, times, datas, raw.t_start, engine)
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
            # Valid JSON of the wrong shape fails this request, as a non-JSON chunk does, never the run.
            return _malformed(index, raw, datas, e)
    finally:
        if gc_was_on:
            gc.enable()


_NO: dict[str, Any] = {}


def _malformed(index: int, raw: RawResponse, datas: list[dict[str, Any]], exc: Exception) -> RequestRecord:
    """The record of a request whose stream had a chunk of the wrong shape: failed, naming the chunk."""
    rec = RequestRecord(index=index, started_at=raw.t_start, e2e_s=raw.t_end - raw.t_start)
    for i, d in enumerate(datas):
        why = chunk_problem(d)
        if why:
            text = json.dumps(d, default=str)
            rec.error = f"malformed chunk {i + 1} of {len(datas)}: {why}: {text[:120]}"
            return rec
    rec.error = f"malformed stream: {type(exc).__name__}: {exc}"[:300]
    return rec


def _count(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return True
    return isinstance(v, str) and v.strip().lstrip("-").isdigit()


def chunk_problem(d: dict[str, Any]) -> str | None:
    """What is wrong with the shape of one stream event, as :func:`fill_from_columns` reads it; None: fine.
    Run only once a stream failed to parse (the fast path does not check)."""
    for name in ("usage", "timings", "meta_info"):
        v = d.get(name)
        if v and not isinstance(v, dict):
            return f"{name} is {type(v).__name__}, not an object"
        for k in ("completion_tokens", "prompt_tokens", "predicted_n", "prompt_n"):
            if v and v.get(k) is not None and not _count(v[k]):
                return f"{name}.{k} is {v[k]!r}, not a count"
    choices = d.get("choices")
    if not choices:
        return None
    if not isinstance(choices, list):
        return f"choices is {type(choices).__name__}, not a list"
    ch = choices[0]
    if not isinstance(ch, dict):
        return f"choices[0] is {type(ch).__name__}, not an object"
    for k in ("finish_reason", "text"):
        if ch.get(k) is not None and not isinstance(ch[k], str):
            return f"choices[0].{k} is {type(ch[k]).__name__}, not a string"
    if ch.get("meta_info") and not isinstance(ch["meta_info"], dict):
        return "choices[0].meta_info is not an object"
    for key in ("delta", "message"):
        delta = ch.get(key)
        if not delta:
            continue
        if not isinstance(delta, dict):
            return f"choices[0].{key} is {type(delta).__name__}, not an object"
        for k in ("content", "reasoning_content", "reasoning"):
            if delta.get(k) is not None and not isinstance(delta[k], str):
                return f"choices[0].{key}.{k} is {type(delta[k]).__name__}, not a string"
        calls = delta.get("tool_calls")
        if calls and not (isinstance(calls, list) and all(_tool_call_ok(c) for c in calls)):
            return f"choices[0].{key}.tool_calls is not a list of tool-call objects"
        break  # fill_from_columns reads delta, else message
    return None


def _tool_call_ok(c: Any) -> bool:
    if not isinstance(c, dict):
        return False
    fn = c.get("function") or {}
    return (
        (c.get("index") is None or (type(c["index"]) is int and 0 <= c["index"] <= MAX_TOOL_CALL_GAP))
        and isinstance(fn, dict)
        and all(fn.get(k) is None or isinstance(fn[k], str) for k in ("name", "arguments"))
    )


def fill_from_columns(
    rec: RequestRecord, times: list[float], datas: list[dict[str, Any]], t_start: float, engine: Engine
) -> RequestRecord:
    """Fill ``rec`` from the stream's events (arrival times and objects, in order).

    This runs once per event on the client's event loop, so it binds locals and looks each key up once.
    """
    text: list[str] = []
    reasoning: list[str] = []
    final: dict[str, Any] = {}
    chunk_times: list[float] = []
    chunk_tokens: list[int] = []
    last_cum = 0
    ttft = None
    finish = rec.finish_reason
    for t, d in zip(times, datas, strict=True):
        if "error" in d:
            err = d["error"]
            rec.error = f"server error in stream: {err.get('message', err) if isinstance(err, dict) else err}"
            rec.finish_reason, rec.ttft_s, rec.chunk_times, rec.chunk_tokens = finish, ttft, chunk_times, chunk_tokens
            return rec
        usage = d.get("usage")
        if usage:
            final["usage"] = usage
        timings = d.get("timings")
        if timings:
            final["timings"] = timings
        meta = d.get("meta_info")
        if meta:
            final["meta_info"] = meta
        choices = d.get("choices")
        ch = choices[0] if choices else _NO
        if ch.get("meta_info"):
            final["meta_info"] = ch["meta_info"]
        fr = ch.get("finish_reason")
        if fr:
            finish = fr
        delta = ch.get("delta") or ch.get("message") or _NO
        piece = delta.get("content") or (ch.get("text") if "text" in ch else None) or ""
        think = delta.get("reasoning_content") or delta.get("reasoning") or ""
        calls = delta.get("tool_calls")
        if calls:
            _tool_call_merge(rec.tool_calls, calls)
        if not (piece or think or calls):
            continue
        # Cumulative token counters some servers stream (vLLM/SGLang continuous usage, llama.cpp timings).
        cum = None
        if usage and usage.get("completion_tokens") is not None:
            cum = int(usage["completion_tokens"])
        elif timings and timings.get("predicted_n") is not None:
            cum = int(timings["predicted_n"])
        if ttft is None:
            ttft = t - t_start
        if cum is not None:
            chunk_tokens.append(max(cum - last_cum, 1))
            last_cum = cum
        else:
            chunk_tokens.append(1)
        chunk_times.append(t - t_start)
        text.append(piece)
        reasoning.append(think)
    rec.finish_reason = finish
    rec.ttft_s = ttft
    rec.chunk_times, rec.chunk_tokens = chunk_times, chunk_tokens
    rec.text, rec.reasoning, rec.final = "".join(text), "".join(reasoning), final
    usage = final.get("usage") or {}
    timings = final.get("timings") or {}
    meta = final.get("meta_info") or {}
    completion = usage.get("completion_tokens", meta.get("completion_tokens", timings.get("predicted_n")))
    rec.completion_tokens = int(completion) if completion is not None else sum(rec.chunk_tokens)
    prompt = usage.get("prompt_tokens", meta.get("prompt_tokens", timings.get("prompt_n")))
    rec.prompt_tokens = int(prompt) if prompt is not None else None
    if rec.ttft_s is None:
        rec.error = "stream ended without any output"
        rec.completion_tokens = 0
        return rec
    rec.spec = engine.request_spec(final, rec.completion_tokens)
    rec.ok = True
    return rec
