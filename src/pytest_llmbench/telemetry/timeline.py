"""A scenario's timeline: samples of one vocabulary of quantities, and a summary per quantity.

Engines name the same thing differently (``sglang:num_queue_reqs``, ``vllm:num_requests_waiting``,
``llamacpp:requests_deferred``); each engine adapter maps its names to the words below
(``Engine.metric_names``), so a report compares SGLang with vLLM and a night with the night before.
Counters are stored as per-second rates between two samples; ``deltas`` keeps each counter's increase
over the whole window (a hit rate is hits over queries of the window, not a mean of rates).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["gauge", "counter"]

#: The one vocabulary, with what each word means (docs/TELEMETRY.md repeats it).
VOCABULARY: Mapping[str, str] = {
    "running_requests": "requests being decoded (gauge)",
    "queued_requests": "requests waiting for a slot (gauge)",
    "kv_cache_usage": "share of KV-cache in use, 0–1 (gauge)",
    "cache_hit_rate": "prefix-cache hit rate the engine reports, 0–1 (gauge)",
    "retracted_requests": "requests retracted/preempted (gauge)",
    "preemptions": "preemptions (counter)",
    "prefix_cache_queries": "prompt tokens looked up in the prefix cache (counter)",
    "prefix_cache_hits": "prompt tokens found in the prefix cache (counter)",
    "prompt_tokens": "prompt tokens processed (counter)",
    "generated_tokens": "tokens generated (counter)",
    "decode_steps": "decode calls / forward passes (counter)",
    "gen_throughput": "the engine's own generation tokens/s (gauge)",
    "spec_accept_length": "speculative accept length (gauge)",
    "spec_drafts": "speculative draft steps (counter)",
    "spec_draft_tokens": "draft tokens proposed (counter)",
    "spec_accepted_tokens": "draft tokens accepted (counter)",
}


@dataclass
class Timeline:
    """Samples at ``interval_s``: each ``{"t": seconds since the start, quantity: value}``; a counter's
    value is its rate per second since the sample before (absent in the first)."""

    interval_s: float
    samples: list[dict[str, float]] = field(default_factory=list)
    deltas: dict[str, float] = field(default_factory=dict)  # each counter's increase over the window
    errors: int = 0  # scrapes that failed (the server's /metrics did not answer)
    source: str = ""

    def quantities(self) -> list[str]:
        return sorted({k for s in self.samples for k in s if k != "t"})

    def summary(self) -> dict[str, float]:
        """One number per quantity for the window: gauges and rates by their mean over samples, counters
        also by their total (``<name>_total``); ``prefix_hit_rate`` from the counters where both exist."""
        out: dict[str, float] = {}
        for q in self.quantities():
            values = [s[q] for s in self.samples if q in s]
            out[q] = statistics.fmean(values)
            out[f"{q}_max"] = max(values)
        for name, d in self.deltas.items():
            out[f"{name}_total"] = d
        queries = self.deltas.get("prefix_cache_queries")
        if queries:
            out["prefix_hit_rate"] = self.deltas.get("prefix_cache_hits", 0.0) / queries
        return {k: round(v, 6) for k, v in out.items()}

    def as_dict(self, samples: bool = True) -> dict[str, object]:
        d: dict[str, object] = {
            "interval_s": self.interval_s,
            "source": self.source,
            "errors": self.errors,
            "summary": self.summary(),
        }
        if samples:
            d["samples"] = [{k: round(v, 4) for k, v in s.items()} for s in self.samples]
        return d
