"""The typed-decision records that the decision datasets load and the decision evals (evals/decisions/) hand
around. Here, with the data, so the loaders below the evals need not import them (pure: the standard library only).

A :class:`Case` is one state with several :class:`Question` objects (a sys1bench task, a Typed Decisions
case). Every question carries its options in a fixed order and its gold as a distribution over them, so
hard labels (one-hot), a teacher's averaged answers (soft) and P(yes) all score the same way. A
:class:`Decision` is one answered (or failed) question: failures are kept, with a reason, so a run never
looks better by dropping what it could not parse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

#: The type name of a yes/no question. "noul" is what SGLang's System One route calls it on the wire, and
#: the name stored in answers.jsonl files and baseline keys (``temperature.noul``), so it stays the value.
YES_NO = "noul"
QuestionType = Literal["choice", "score", "noul"]
QUESTION_TYPES: tuple[str, ...] = ("choice", "score", YES_NO)
#: Options of a yes/no question, in this order everywhere (P(yes) first).
YES_NO_OPTIONS: tuple[str, str] = ("yes", "no")


@dataclass(frozen=True)
class Question:
    """One question of a case. ``options`` are choice keys, score level labels, or ``("yes", "no")``.

    ``gold`` is a probability vector over ``options`` (one-hot for a hard label) or None when the set
    has no answer for it; ``descriptions`` line up with ``options``.
    """

    qid: str
    type: str
    instructions: str
    options: tuple[str, ...]
    descriptions: tuple[str | None, ...] = ()
    gold: tuple[float, ...] | None = None

    def option_descriptions(self) -> tuple[str | None, ...]:
        """One description (or None) per option, whatever the set gave."""
        return self.descriptions if len(self.descriptions) == len(self.options) else (None,) * len(self.options)

    def __post_init__(self) -> None:
        if self.type not in QUESTION_TYPES:
            raise ValueError(f"question {self.qid!r}: unknown type {self.type!r} (known: {QUESTION_TYPES})")
        if len(self.options) < 2:
            raise ValueError(f"question {self.qid!r}: needs at least two options, got {self.options!r}")
        if len(set(self.options)) != len(self.options):
            raise ValueError(f"question {self.qid!r}: duplicate options {self.options!r}")
        if self.gold is not None and len(self.gold) != len(self.options):
            raise ValueError(
                f"question {self.qid!r}: gold has {len(self.gold)} entries for {len(self.options)} options"
            )

    @property
    def hard_gold(self) -> bool:
        return self.gold is not None and sorted(self.gold)[-1] == 1.0


@dataclass(frozen=True)
class Case:
    """One state and its questions. ``group`` is the workflow / domain / source the priors key on."""

    case_id: str
    state: Any
    questions: Mapping[str, Question]
    group: str = ""
    split: str = ""

    def state_text(self) -> str:
        """The state as the prompt shows it: strings verbatim, objects as ``key: value`` lines."""
        return state_text(self.state)


def state_text(state: Any) -> str:
    if isinstance(state, str):
        return state
    if isinstance(state, Mapping):
        return "\n".join(f"{k}: {state_text(v) if isinstance(v, (Mapping, list)) else v}" for k, v in state.items())
    if isinstance(state, list):
        return "\n".join(state_text(x) if isinstance(x, (Mapping, list)) else str(x) for x in state)
    return str(state)


@dataclass
class Decision:
    """One question's answer from one client: probabilities over the question's options, or a failure.

    ``probs`` is None exactly when ``ok`` is False; ``reason`` then says why (HTTP status, missing
    field, unknown option, NaN). ``gold`` is copied from the question so metrics need nothing else.
    """

    case_id: str
    qid: str
    qtype: str
    group: str
    options: tuple[str, ...]
    probs: tuple[float, ...] | None
    gold: tuple[float, ...] | None = None
    ok: bool = True
    reason: str | None = None
    latency_s: float | None = None
    raw: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.case_id, self.qid)

    @property
    def top(self) -> str | None:
        if not self.ok or self.probs is None:
            return None
        return self.options[max(range(len(self.probs)), key=self.probs.__getitem__)]

    @classmethod
    def failed(
        cls, case: Case, q: Question, reason: str, *, latency_s: float | None = None, raw: Any = None
    ) -> Decision:
        return cls(
            case.case_id,
            q.qid,
            q.type,
            case.group,
            q.options,
            None,
            q.gold,
            ok=False,
            reason=reason,
            latency_s=latency_s,
            raw=raw,
        )

    def to_json(self) -> dict[str, Any]:
        """One JSONL line (answers.jsonl): enough to re-score or pair this decision later."""
        return {
            "case_id": self.case_id,
            "qid": self.qid,
            "type": self.qtype,
            "group": self.group,
            "options": list(self.options),
            "probs": None if self.probs is None else list(self.probs),
            "gold": None if self.gold is None else list(self.gold),
            "ok": self.ok,
            "reason": self.reason,
            "latency_s": self.latency_s,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Decision:
        return cls(
            d["case_id"],
            d["qid"],
            d["type"],
            d.get("group", ""),
            tuple(d["options"]),
            None if d.get("probs") is None else tuple(d["probs"]),
            None if d.get("gold") is None else tuple(d["gold"]),
            ok=bool(d.get("ok", True)),
            reason=d.get("reason"),
            latency_s=d.get("latency_s"),
        )


def normalise(
    case: Case,
    q: Question,
    values: Sequence[float],
    *,
    latency_s: float | None = None,
    raw: Any = None,
    meta: dict[str, Any] | None = None,
) -> Decision:
    """Probabilities over ``q.options`` → a Decision; NaN, negative or all-zero values fail it."""
    try:
        vals = [float(v) for v in values]
    except (TypeError, ValueError):
        return Decision.failed(
            case, q, f"probabilities are not numbers: {list(values)!r:.120}", latency_s=latency_s, raw=raw
        )
    if len(vals) != len(q.options):
        return Decision.failed(
            case, q, f"{len(vals)} probabilities for {len(q.options)} options", latency_s=latency_s, raw=raw
        )
    if any(not math.isfinite(v) for v in vals):
        return Decision.failed(case, q, "probabilities contain NaN or infinity", latency_s=latency_s, raw=raw)
    if any(v < 0 for v in vals):
        return Decision.failed(case, q, "negative probability", latency_s=latency_s, raw=raw)
    total = sum(vals)
    if total <= 0:
        return Decision.failed(case, q, "probabilities sum to zero", latency_s=latency_s, raw=raw)
    return Decision(
        case.case_id,
        q.qid,
        q.type,
        case.group,
        q.options,
        tuple(v / total for v in vals),
        q.gold,
        latency_s=latency_s,
        raw=raw,
        meta=dict(meta or {}),
    )
