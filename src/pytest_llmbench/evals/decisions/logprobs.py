"""The decision fallback for engines without a decision route (llama.cpp here): first-token logprobs.

One non-streamed chat request per question on the engine's chat route: the options listed as letters,
``max_tokens: 1`` at temperature 0 with ``logprobs``/``top_logprobs: 20``, thinking off; the label
probabilities are read from the first generated token's top logprobs, renormalised over the options.
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_llmbench.datasets.decision_schema import YES_NO, Case, Decision, Question, normalise
from pytest_llmbench.evals.decisions.runner import DecisionClient
from pytest_llmbench.transport.http import StreamClient

LETTERS = string.ascii_uppercase


def option_lines(q: Question) -> list[str]:
    descs = q.option_descriptions()
    lines = []
    for letter, opt, desc in zip(LETTERS, q.options, descs, strict=False):
        if q.type == YES_NO:
            lines.append(f"{letter}. {opt}")
        elif q.type == "score":
            lines.append(f"{letter}. level {opt}" + (f": {desc}" if desc else ""))
        else:
            lines.append(f"{letter}. {opt}" + (f": {desc}" if desc else ""))
    return lines


def fallback_prompt(case: Case, q: Question) -> str:
    """The one user message of a fallback request: state, question, lettered options, answer format."""
    return (
        f"{case.state_text()}\n\nQuestion: {q.instructions}\nOptions:\n"
        + "\n".join(option_lines(q))
        + "\n\nAnswer with the letter of the best option only."
    )


def _letter_of(token: str) -> str | None:
    t = token.strip().rstrip(".):")
    return t if len(t) == 1 and t in LETTERS else None


def letter_probabilities(
    top: Iterable[Mapping[str, Any]], n_options: int
) -> tuple[list[float] | None, str | None, int]:
    """First-token top_logprobs → (probabilities over the first ``n_options`` letters, reason, missing).

    Tokens that spell the same letter (``"A"``, ``" A"``, ``"A."``) add up. A letter absent from the
    list gets the smallest listed probability, an upper bound on its true value (``missing`` counts
    them); when no letter is listed the decision fails.
    """
    top = list(top)
    letters = LETTERS[:n_options]
    mass: dict[str, float] = {}
    listed: list[float] = []
    for entry in top:
        lp = entry.get("logprob") if isinstance(entry, Mapping) else None
        if not isinstance(lp, (int, float)) or isinstance(lp, bool) or math.isnan(lp):
            return None, f"malformed top_logprobs entry {entry!r:.80}", 0
        listed.append(math.exp(lp))
        letter = _letter_of(str(entry.get("token", "")))
        if letter is not None and letter in letters:
            mass[letter] = mass.get(letter, 0.0) + math.exp(lp)
    if not listed:
        return None, "empty top_logprobs", 0
    if not mass:
        first = top[listed.index(max(listed))].get("token")
        return None, f"no option letter among the top {len(listed)} tokens (top token {first!r})", 0
    floor = min(listed)
    missing = sum(1 for L in letters if L not in mass)
    return [mass.get(L, floor) for L in letters], None, missing


class LogprobClient(DecisionClient):
    """Any OpenAI-compatible chat route: one ``max_tokens: 1`` request per question, thinking off."""

    route = "/v1/chat/completions"

    def __init__(self, base_url: str, *, top_logprobs: int = 20, **kw: Any):
        super().__init__(base_url, **kw)
        self.top_logprobs = top_logprobs

    def body(self, case: Case, q: Question) -> dict[str, Any]:
        if len(q.options) > len(LETTERS):
            raise ValueError(f"question {q.qid!r} has {len(q.options)} options; the fallback letters only go to 26")
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": fallback_prompt(case, q)}],
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": self.top_logprobs,
            "chat_template_kwargs": {"enable_thinking": False},
        }
        if self.model:
            body["model"] = self.model
        return {**body, **self.extra_body}

    async def decide_case(self, client: StreamClient, case: Case) -> list[Decision]:
        return [await self.decide_question(client, case, q) for q in case.questions.values()]

    async def decide_question(self, client: StreamClient, case: Case, q: Question) -> Decision:
        try:
            body = self.body(case, q)
        except ValueError as e:
            return Decision.failed(case, q, str(e))
        reply = await self.post(client, body)
        data, err, lat = reply.data, reply.error, reply.latency_s
        if err is not None:
            return Decision.failed(case, q, err, latency_s=lat)
        try:
            content = data["choices"][0]["logprobs"]["content"]
            top = content[0]["top_logprobs"]
        except (KeyError, IndexError, TypeError):
            return Decision.failed(
                case, q, "no choices[0].logprobs.content[0].top_logprobs in the response", latency_s=lat, raw=data
            )
        if not isinstance(top, list):
            return Decision.failed(case, q, "top_logprobs is not a list", latency_s=lat, raw=data)
        probs, reason, missing = letter_probabilities(top, len(q.options))
        if probs is None:
            return Decision.failed(case, q, reason or "no probabilities", latency_s=lat, raw=top)
        meta = {"missing_options": missing, "first_token": content[0].get("token")}
        return normalise(case, q, probs, latency_s=lat, raw=None, meta=meta)
