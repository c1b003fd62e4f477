"""Thinking tokens and total tokens per answer.

Why: the posts' fine-tune claim ("14–19% fewer thinking tokens") is about answers that stopped on
their own, so thinking tokens are counted only there, by re-tokenizing the reasoning text with the
server's own tokenizer (the usage counts thinking and answer together). Total tokens count every
answer; an answer cut at the limit counts as the limit and is flagged, since its true length is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pytest_llmbench.evals.accept_length import Summary

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer
    from pytest_llmbench.workload.records import RequestRecord

NATURAL_STOPS = frozenset({"stop", "tool_calls", "eos", "stop_sequence"})


@dataclass(frozen=True)
class AnswerTokens:
    """One answer: thinking tokens (None when it did not stop on its own) and total completion tokens."""

    id: str
    set: str
    thinking_tokens: int | None
    total_tokens: int
    stopped: bool
    cut: bool


def stopped_on_its_own(rec: RequestRecord) -> bool:
    return rec.ok and rec.finish_reason in NATURAL_STOPS


def answer_tokens(
    rec: RequestRecord, tokenize: Callable[[str], list[int]], max_tokens: int | None, *, id: str = "", set: str = ""
) -> AnswerTokens | None:
    """Count one answer; None for a failed request (it has no answer to count)."""
    if not rec.ok:
        return None
    stopped = stopped_on_its_own(rec)
    cut = rec.finish_reason == "length" or (
        max_tokens is not None and rec.completion_tokens >= max_tokens and not stopped
    )
    total = max_tokens if cut and max_tokens is not None else rec.completion_tokens
    thinking = (len(tokenize(rec.reasoning)) if rec.reasoning else 0) if stopped else None
    return AnswerTokens(
        id=id or str(rec.index), set=set, thinking_tokens=thinking, total_tokens=int(total), stopped=stopped, cut=cut
    )


@dataclass
class ThinkingResult:
    answers: list[AnswerTokens]
    failed: int = 0

    def sets(self) -> list[str]:
        return sorted({a.set for a in self.answers})

    def thinking(self, set: str | None = None) -> list[int]:
        """Thinking tokens of the answers that stopped on their own."""
        return [
            a.thinking_tokens for a in self.answers if a.thinking_tokens is not None and (set is None or a.set == set)
        ]

    def totals(self, set: str | None = None) -> list[int]:
        """Total tokens of every answer (cut ones at the limit)."""
        return [a.total_tokens for a in self.answers if set is None or a.set == set]

    def cut(self, set: str | None = None) -> int:
        return sum(1 for a in self.answers if a.cut and (set is None or a.set == set))

    def stopped(self, set: str | None = None) -> int:
        return sum(1 for a in self.answers if a.stopped and (set is None or a.set == set))

    def per_set(self) -> dict[str, dict[str, Any]]:
        out = {}
        for s in self.sets():
            out[s] = {
                "thinking_tokens": Summary.of(self.thinking(s)).as_dict(),
                "total_tokens": Summary.of(self.totals(s)).as_dict(),
                "answers": len(self.totals(s)),
                "stopped": self.stopped(s),
                "cut": self.cut(s),
            }
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "thinking_tokens": Summary.of(self.thinking()).as_dict(),
            "total_tokens": Summary.of(self.totals()).as_dict(),
            "answers": len(self.answers),
            "stopped": self.stopped(),
            "cut": self.cut(),
            "failed": self.failed,
            "by_set": self.per_set(),
            "cut_ids": [a.id for a in self.answers if a.cut],
        }


def count_tokens(
    server: LLMServer, items: Iterable[tuple[str, str, RequestRecord]], max_tokens: int | None
) -> ThinkingResult:
    """``items`` are (id, set, record); reasoning text is re-tokenized through ``server.tokenize``."""
    return count_with(server.tokenize, items, max_tokens)


def count_with(
    tokenize: Callable[[str], list[int]], items: Iterable[tuple[str, str, RequestRecord]], max_tokens: int | None
) -> ThinkingResult:
    answers, failed = [], 0
    for id_, set_, rec in items:
        a = answer_tokens(rec, tokenize, max_tokens, id=id_, set=set_)
        if a is None:
            failed += 1
        else:
            answers.append(a)
    return ThinkingResult(answers, failed)


def from_turns(server: LLMServer, turns: Sequence[Any], max_tokens: int | None) -> ThinkingResult:
    """Thinking/total tokens of accept-length turns (:class:`~.accept_length.TurnResult`), first turns only
    for multi-turn prompts so every prompt counts once."""
    items = [(t.prompt.id, t.prompt.set, t.record) for t in turns if t.turn == 0]
    return count_tokens(server, items, max_tokens)


def common_stops(a: ThinkingResult, b: ThinkingResult) -> tuple[ThinkingResult, ThinkingResult]:
    """Both results cut to the prompts where *both* answers stopped on their own (the Swift post's
    "125 of 142 turns where both models stopped"), so thinking tokens compare the same prompts."""
    stopped_a = {(x.set, x.id) for x in a.answers if x.stopped}
    both = stopped_a & {(x.set, x.id) for x in b.answers if x.stopped}
    return (
        ThinkingResult([x for x in a.answers if (x.set, x.id) in both]),
        ThinkingResult([x for x in b.answers if (x.set, x.id) in both]),
    )


def answers_json(result: ThinkingResult) -> list[dict[str, Any]]:
    """Per-answer counts, saved beside a config's results so a later config can pair with them."""
    return [asdict(x) for x in result.answers]


def from_answers_json(rows: Sequence[dict[str, Any]], *, where: str = "") -> ThinkingResult:
    try:
        return ThinkingResult([AnswerTokens(**row) for row in rows])
    except TypeError as e:
        raise ValueError(f"{where}: not a per-answer thinking-token list ({e})") from None
