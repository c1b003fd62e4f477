"""A shared-prefix, multi-turn workload: where a server's prefix cache decides TTFT.

A prefix-cache regression hides inside TTFT on a ShareGPT workload (every prompt is new); here it cannot.
``groups`` groups of ``conversations`` each share a long system prompt (SGLang's generated-shared-prefix
``--gsp-*`` dataset has the same shape), and each conversation has ``turns`` user turns, every turn
resending the system prompt and the conversation so far, as a chat client does. The earlier assistant
answers are fixed text, not the model's replies, so every arm and every round sends exactly the same
tokens (a comparison's blocks need that), and no request waits for another's answer.

Offline: the text is cut from the shipped ShareGPT first turns (datasets/sharegpt.py), no download.
Prompts come in conversation order (group, conversation, turn), so at concurrency 1 turn k follows turn
k − 1 of its conversation and can reuse its whole prefix; ``Prompt.group`` holds ``group``,
``conversation`` and ``turn`` for per-turn results (``ttft_by_turn``).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_llmbench.datasets.files import DatasetError
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.sharegpt import sharegpt_prompts


def _words(texts: Iterable[str]) -> list[str]:
    return [w for t in texts for w in t.split()]


def _take(words: list[str], rng: random.Random, n: int) -> str:
    start = rng.randrange(max(1, len(words) - n))
    return " ".join(words[start : start + n])


def shared_prefix_prompts(
    groups: int = 2,
    conversations: int = 2,
    turns: int = 3,
    *,
    system_words: int = 600,
    question_words: int = 30,
    answer_words: int = 40,
    seed: int = 1,
    path: Path | None = None,
) -> list[Prompt]:
    """``groups × conversations × turns`` prompts; each group's system prompt is ``system_words`` words
    (≈ 1.3 tokens a word for English text in SmolLM2/Llama tokenizers), each turn resends the history."""
    for key, value in (("groups", groups), ("conversations", conversations), ("turns", turns)):
        if value < 1:
            raise DatasetError(f"shared_prefix_prompts: {key} must be ≥ 1, got {value}")
    if min(system_words, question_words, answer_words) < 1:
        raise DatasetError("shared_prefix_prompts: system_words, question_words and answer_words must be ≥ 1")
    words = _words(p.text for p in sharegpt_prompts(64, seed, min_chars=200, path=path))
    if len(words) < system_words + question_words:
        raise DatasetError(f"shared_prefix_prompts: the ShareGPT sample has {len(words)} words, fewer than needed")
    rng = random.Random(seed)
    out = []
    for g in range(groups):
        # the group's number first: two groups' system prompts differ from their first tokens on
        system = f"Assistant profile {g + 1}. Read this reference material before answering. " + _take(
            words, rng, system_words
        )
        for c in range(conversations):
            history: list[tuple[str, str]] = [("system", system)]
            for t in range(turns):
                question = f"Question {t + 1} of conversation {c + 1}: " + _take(words, rng, question_words)
                out.append(
                    Prompt(
                        question,
                        id=f"gsp-g{g}-c{c}-t{t}",
                        set="shared-prefix",
                        group={"group": g, "conversation": c, "turn": t},
                        system=system,
                        history=tuple(history),
                    )
                )
                history += [("user", question), ("assistant", _take(words, rng, answer_words))]
    return out


def ttft_by_turn(prompts: Sequence[Prompt], records: Sequence[Any]) -> dict[int, float]:
    """Median TTFT in ms per turn index, over the successful requests (``records[i].index`` names the
    prompt): turn 0 pays for the shared system prompt unless another conversation cached it."""
    by: dict[int, list[float]] = {}
    for r in records:
        if getattr(r, "ok", False) and r.ttft_s is not None and r.index < len(prompts):
            turn = prompts[r.index].group.get("turn")
            if isinstance(turn, int):
                by.setdefault(turn, []).append(1000 * r.ttft_s)
    return {t: statistics.median(v) for t, v in sorted(by.items())}
