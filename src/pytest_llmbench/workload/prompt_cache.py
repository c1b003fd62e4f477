"""How many prompt tokens a server served from its prefix cache, per request and over a run.

Why: the decisions post reads its answers against the cache ("about 5% of prompt tokens cached",
"68–76% cached", "30% of Typed Decision Bench"), so every run that the posts describe that way records
the same share. Each engine says it differently in the final chunk a record keeps (``record.final``):

* OpenAI usage (SGLang, vLLM, newer llama.cpp): ``usage.prompt_tokens_details.cached_tokens``;
* SGLang's native ``meta_info.cached_tokens``;
* llama.cpp's ``timings``: ``cache_n`` tokens reused, ``prompt_n`` tokens processed.

Routes that return no usage (SGLang's decision routes) leave the share to the server log: each engine
reads its own (``Engine.log_cached_share``) from a :class:`LogWindow`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def cached_prompt_tokens(final: Mapping[str, Any]) -> tuple[int, int] | None:
    """(cached, prompt tokens) of one response's final chunk, or None when the server said nothing."""
    timings = final.get("timings") or {}
    if "cache_n" in timings and "prompt_n" in timings:
        cached = int(timings["cache_n"])
        return cached, cached + int(timings["prompt_n"])
    usage = final.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    if details.get("cached_tokens") is not None and usage.get("prompt_tokens"):
        return int(details["cached_tokens"]), int(usage["prompt_tokens"])
    meta = final.get("meta_info") or {}
    if meta.get("cached_tokens") is not None and meta.get("prompt_tokens"):
        return int(meta["cached_tokens"]), int(meta["prompt_tokens"])
    return None


def cached_share(finals: Iterable[Mapping[str, Any]]) -> float | None:
    """Cached prompt tokens over all prompt tokens of the responses that report both (None if none do)."""
    cached = total = 0
    for final in finals:
        counts = cached_prompt_tokens(final)
        if counts is not None:
            cached += counts[0]
            total += counts[1]
    return cached / total if total else None


class LogWindow:
    """The part of a server log written between ``__init__`` and :meth:`text` (one pass's lines)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.start = self.path.stat().st_size if self.path.exists() else 0

    def text(self) -> str:
        if not self.path.exists():
            return ""
        with open(self.path, "rb") as f:
            f.seek(self.start)
            return f.read().decode("utf-8", "replace")
