"""The one prompt type every workload and eval hands around."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Prompt:
    """One prompt: a single user message (``Prompt("text")``) or several user ``turns`` (MT-Bench and
    SPEED-Bench have several); ``text`` is always the first turn.

    ``input_tokens`` is its length in tokens when measured (exact-length prompts); ``id`` and ``set``
    name it in results; ``group`` holds what results are grouped by (SPEED-Bench domain, prompt length);
    ``answer`` is the reference answer of a graded set; ``system`` an optional system message.
    """

    text: str = ""
    input_tokens: int | None = None
    id: str = ""
    set: str = ""
    turns: tuple[str, ...] = ()
    group: Mapping[str, Any] = field(default_factory=dict)
    answer: str | None = None
    system: str | None = None
    # Messages resent before ``text`` as (role, content): a shared system prompt and the earlier turns of a
    # conversation (datasets/shared_prefix.py), so a request carries the prefix a server's cache may hold.
    history: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.turns:
            object.__setattr__(self, "turns", (self.text,))
        elif not self.text:
            object.__setattr__(self, "text", self.turns[0])
        elif self.text != self.turns[0]:
            raise ValueError(f"prompt {self.id or self.text[:40]!r}: text and the first turn differ; give one of them")
        object.__setattr__(self, "turns", tuple(self.turns))

    def messages(self, turn: int = 0, answers: Sequence[str] = ()) -> list[dict[str, str]]:
        """Chat messages for user turn ``turn``, with the model's earlier ``answers`` in between."""
        if turn >= len(self.turns):
            raise IndexError(f"prompt {self.id} has {len(self.turns)} turn(s), asked for turn {turn}")
        if len(answers) < turn:
            raise ValueError(f"turn {turn} of prompt {self.id} needs the {turn} earlier answer(s)")
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        for i in range(turn):
            msgs += [{"role": "user", "content": self.turns[i]}, {"role": "assistant", "content": answers[i]}]
        msgs.append({"role": "user", "content": self.turns[turn]})
        return msgs

    def chat(self) -> list[dict[str, str]]:
        """The request's messages: ``history`` then ``text`` as the user's message."""
        return [{"role": r, "content": c} for r, c in self.history] + [{"role": "user", "content": self.text}]

    def first_turn(self) -> Prompt:
        """A single-turn copy (the DFlash2 card uses MT-Bench's first turn only)."""
        return replace(self, turns=self.turns[:1])
