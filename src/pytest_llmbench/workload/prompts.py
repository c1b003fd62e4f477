"""Prompts a scenario builds with its server: exact-length prompts, measured with the server's tokenizer.

Exact-length prompts repeat one ShareGPT prompt to the requested token count, measured with the
server's own /tokenize (what sglang's ``random`` dataset with ``--random-range-ratio 1`` aims at).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_llmbench.datasets.files import DatasetError
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.sharegpt import sharegpt_prompts

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer

__all__ = ["Prompt", "exact_length_prompts"]


def exact_length_prompts(
    server: LLMServer, n: int, input_len: int, seed: int, *, path: Path | None = None
) -> list[Prompt]:
    """``n`` prompts of exactly ``input_len`` tokens: one ShareGPT prompt repeated, each rotated
    differently so they do not share a prefix, then checked (and trimmed) with the server's /tokenize."""
    base_text = sharegpt_prompts(1, seed, min_chars=200, path=path)[0].text
    base = server.tokenize(base_text)
    if not base:
        raise DatasetError("the server tokenized the ShareGPT prompt to zero tokens")
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
