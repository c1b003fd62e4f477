"""GSM8K: the posts' grader (last ``\\boxed{}``, else the last number) and accuracy with a binomial interval.

Why: GSM8K is near ceiling for the posts' models, so a change of a few answers is noise; the result
carries the exact count and n for the gate's binomial noise model, and answers cut off at the limit are
counted and reported because a cut answer is wrong for a reason that is not the model's arithmetic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from scipy import stats

from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.prompt_sets import gsm8k_gold
from pytest_llmbench.evals.protocols import get_protocol

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer
    from pytest_llmbench.workload.records import RequestRecord

_NUMBER = re.compile(r"-?\$?\s*\d[\d,]*(?:\.\d+)?|-?\.\d+")


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{…}`` (or ``\\fbox{…}``), braces balanced; None if there is none."""
    best = None
    for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            best = text[m.end() : i - 1]
    return best


def last_number(text: str) -> str | None:
    found = _NUMBER.findall(text)
    return found[-1] if found else None


def normalize_number(s: str) -> str | None:
    """'$1,234.00' → '1234', '\\$18' → '18', '-3.50' → '-3.5', '7.' → '7'; None if not a number."""
    t = s.strip()
    t = re.sub(r"\\text\{([^}]*)\}", r"\1", t)
    t = re.sub(r"\\!|\\,|\\ |\\\$|\$|,|\s", "", t)
    t = t.rstrip(".").rstrip("%")
    t = re.sub(r"^(-?)\\?(?:dfrac|frac)\{(-?\d+)\}\{(\d+)\}$", r"\1\2/\3", t)
    try:
        if "/" in t:
            num, den = t.split("/", 1)
            value = Decimal(num) / Decimal(den)
        else:
            value = Decimal(t)
    except (InvalidOperation, ValueError, ZeroDivisionError):
        return None
    if value == value.to_integral_value():
        return str(value.to_integral_value())
    return format(value.normalize(), "f")


def extract_answer(text: str) -> str | None:
    """The graded answer: the last \\boxed{} if any (its last number when it holds words), else the last number."""
    boxed = last_boxed(text)
    if boxed is not None:
        direct = normalize_number(boxed)
        if direct is not None:
            return direct
        inner = last_number(boxed)
        return normalize_number(inner) if inner is not None else boxed.strip()
    n = last_number(text)
    return normalize_number(n) if n is not None else None


def is_correct(text: str, gold: str) -> bool:
    pred = extract_answer(text)
    want = normalize_number(gold_text := gsm8k_gold(gold))
    return pred is not None and pred == (want if want is not None else gold_text)


@dataclass(frozen=True)
class GradedAnswer:
    id: str
    correct: bool
    predicted: str | None
    gold: str
    cut: bool
    failed: bool = False


@dataclass
class GSM8KResult:
    answers: list[GradedAnswer] = field(default_factory=list)
    confidence: float = 0.95

    @property
    def n(self) -> int:
        return len(self.answers)

    @property
    def correct(self) -> int:
        return sum(a.correct for a in self.answers)

    @property
    def cut(self) -> int:
        return sum(a.cut for a in self.answers)

    @property
    def failed(self) -> int:
        return sum(a.failed for a in self.answers)

    def by_case(self) -> dict[str, float]:
        """{question id: 1.0 correct / 0.0 not}: the cases a McNemar gate pairs on."""
        return {a.id: float(a.correct) for a in self.answers}

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")

    def interval(self) -> tuple[float, float]:
        """Exact (Clopper–Pearson) binomial interval for the accuracy."""
        if not self.n:
            return float("nan"), float("nan")
        ci = stats.binomtest(self.correct, self.n).proportion_ci(confidence_level=self.confidence)
        return float(ci.low), float(ci.high)

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {
            "correct": self.correct,
            "n": self.n,
            "accuracy": self.accuracy,
            "ci_low": lo,
            "ci_high": hi,
            "confidence": self.confidence,
            "cut": self.cut,
            "failed": self.failed,
            "cut_ids": [a.id for a in self.answers if a.cut],
            "wrong_ids": [a.id for a in self.answers if not a.correct],
        }


def grade(prompts: Sequence[Prompt], records: Sequence[RequestRecord], max_tokens: int | None = None) -> GSM8KResult:
    """Grade each record against its prompt's answer; a failed request counts as wrong and failed."""
    out = GSM8KResult()
    for p, rec in zip(prompts, records, strict=True):
        gold = p.answer or ""
        if not rec.ok:
            out.answers.append(GradedAnswer(p.id, False, None, gold, cut=False, failed=True))
            continue
        cut = rec.finish_reason == "length" or (max_tokens is not None and rec.completion_tokens >= max_tokens)
        out.answers.append(GradedAnswer(p.id, is_correct(rec.text, gold), extract_answer(rec.text), gold, cut))
    return out


def run_gsm8k(
    server: LLMServer,
    prompts: Sequence[Prompt],
    protocol: str = "gsm8k-seeds",
    *,
    concurrency: int | None = None,
    run: Callable[..., list[RequestRecord]] | None = None,
    **overrides: Any,
) -> tuple[GSM8KResult, list[RequestRecord]]:
    """Ask every question under ``protocol`` and grade; returns the result and the raw records."""
    if run is None:
        from pytest_llmbench.workload.requests import run_requests

        run = run_requests
    proto = get_protocol(protocol)
    body = proto.request_body(**overrides)
    bodies = [{**body, "messages": p.messages()} for p in prompts]
    records = run(server, bodies, concurrency=concurrency or proto.users)
    return grade(prompts, records, body.get("max_tokens")), records
