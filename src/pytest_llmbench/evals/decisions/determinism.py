"""Does a warm prefix cache change the answers? Cold vs warm decision passes, cached vs uncached text.

A decision is prefill only, so with a correct cache the same prompt should give the same probabilities
whether its prefix was computed now or reused. The decisions post saw 25–34 of 250 top answers change with a
warm hierarchical cache and none without it. Two checks:

* :func:`cold_warm`: the same decisions in a cold pass (cache flushed first; on llama.cpp each request
  also sends ``cache_prompt: false``) and then a warm pass (the cache holds every prompt); count top
  answers that change and the largest probability shift.
* :func:`greedy_cached_vs_uncached`: SGLang's own radix-cache check: greedy text of the same prompt with
  prefill computed fresh vs reused from the cache must be identical.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_llmbench.datasets.decision_schema import Case, Decision
from pytest_llmbench.evals.decisions.runner import DecisionClient
from pytest_llmbench.transport.kinds import call_json


@dataclass
class PassDiff:
    """How two passes over the same decisions differ."""

    n: int  # decisions answered in both passes
    answers_changed: int
    max_prob_shift: float
    failed_a: int
    failed_b: int
    changed: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "answers_changed": self.answers_changed,
            "max_prob_shift": self.max_prob_shift,
            "failed_a": self.failed_a,
            "failed_b": self.failed_b,
        }


def compare_passes(a: Iterable[Decision], b: Iterable[Decision]) -> PassDiff:
    """Top answers that differ and the largest |Δp| over any option, on decisions both passes answered."""
    a_list = list(a)
    b_by_key = {d.key: d for d in b}
    n = changed = 0
    shift = 0.0
    keys: list[tuple[str, str]] = []
    for d in a_list:
        e = b_by_key.get(d.key)
        if e is None or not d.ok or not e.ok or d.probs is None or e.probs is None:
            continue
        n += 1
        shift = max(shift, max(abs(x - y) for x, y in zip(d.probs, e.probs, strict=True)))
        if d.top != e.top:
            changed += 1
            keys.append(d.key)
    return PassDiff(n, changed, shift, sum(not d.ok for d in a_list), sum(not d.ok for d in b_by_key.values()), keys)


def _with_extra(client: DecisionClient, extra: dict[str, Any]) -> DecisionClient:
    c = copy.copy(client)
    c.extra_body = {**client.extra_body, **extra}
    return c


def cold_pass(server: Any, client: DecisionClient, cases: Sequence[Case]) -> tuple[list[Decision], str | None]:
    """One pass with a cold prefix cache, as the posts' noise passes ran: flushed first, and on an engine
    without a flush route every request asks for no prompt reuse. Returns (decisions, flush note)."""
    note = server.flush_cache()
    return _with_extra(client, dict(server.engine.uncached_fields)).run(cases), note


def cold_warm(
    server: Any, client: DecisionClient, cases: Sequence[Case]
) -> tuple[list[Decision], list[Decision], str | None]:
    """(cold pass, warm pass, flush note): the cache is flushed before the cold pass only."""
    note = server.flush_cache()
    cold = _with_extra(client, dict(server.engine.uncached_fields)).run(cases)
    warm = client.run(cases)
    return cold, warm, note


@dataclass
class GreedyDiff:
    n: int
    mismatched: int
    failed: int
    cache_hits: int  # cached requests the server says reused a prefix (llama.cpp timings.cache_n > 0)
    examples: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "text_mismatches": self.mismatched, "failed": self.failed, "cache_hits": self.cache_hits}


def _greedy(
    server: Any, prompt: str, max_tokens: int, extra: Mapping[str, Any]
) -> tuple[str | None, int | None, str | None]:
    """(text, cache_n, error) of one greedy non-streamed chat answer on the engine's chat route."""
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "seed": 0,
        "chat_template_kwargs": {"enable_thinking": False},
        **extra,
    }
    reply = call_json(
        server.base_url, server.engine.chat_path, body, timeout_s=120.0, api_key=getattr(server.config, "api_key", None)
    )
    if not reply.ok:
        return None, None, reply.error
    try:
        data = reply.data
        text = data["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        return None, None, "malformed chat response"
    cache_n = (data.get("timings") or {}).get("cache_n")
    return text, cache_n, None


def greedy_cached_vs_uncached(server: Any, prompts: Sequence[str], *, max_tokens: int = 32) -> GreedyDiff:
    """For each prompt: flush, greedy text with prefill computed fresh, then with the prefix reused."""
    uncached, cached = server.engine.uncached_fields, server.engine.cached_fields
    out = GreedyDiff(0, 0, 0, 0)
    for p in prompts:
        server.flush_cache()
        t_fresh, _, e1 = _greedy(server, p, max_tokens, uncached)
        t_cached, cache_n, e2 = _greedy(server, p, max_tokens, cached)
        if e1 or e2:
            out.failed += 1
            continue
        out.n += 1
        out.cache_hits += int(bool(cache_n))
        if t_fresh != t_cached:
            out.mismatched += 1
            if len(out.examples) < 3:
                out.examples.append({"prompt": p[:80], "uncached": t_fresh or "", "cached": t_cached or ""})
    return out
