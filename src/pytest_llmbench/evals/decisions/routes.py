"""SGLang's decision routes: ``/v1/systemone`` (TypeSafe System One shape) and ``/v1/decisions``
(OpenRouter alpha shape). One request answers every question of a case; any problem with the response
fails each of its questions with the reason, and a bad answer to one question fails that question only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_llmbench.datasets.decision_schema import YES_NO, YES_NO_OPTIONS, Case, Decision, Question, normalise
from pytest_llmbench.evals.decisions.runner import DecisionClient
from pytest_llmbench.transport.http import StreamClient


class RouteClient(DecisionClient):
    """A decision route (SGLang's /v1/systemone, /v1/decisions): one request answers every question of
    a case; any problem with the response fails each of its questions with the reason."""

    answer_keys: tuple[str, ...] = ("answers",)

    async def decide_case(self, client: StreamClient, case: Case) -> list[Decision]:
        reply = await self.post(client, self.body(case))
        data, err, lat = reply.data, reply.error, reply.latency_s
        if err is None and not isinstance(data, Mapping):
            err = "response is not a JSON object"
        if err is not None:
            return [Decision.failed(case, q, err, latency_s=lat) for q in case.questions.values()]
        answers = next((data[k] for k in self.answer_keys if isinstance(data.get(k), Mapping)), None)
        if answers is None:
            return [
                Decision.failed(case, q, "no 'answers' object in the response", latency_s=lat, raw=data)
                for q in case.questions.values()
            ]
        return [self.parse(case, q, answers.get(q.qid), lat) for q in case.questions.values()]

    def body(self, case: Case) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, case: Case, q: Question, a: Any, lat: float) -> Decision:
        raise NotImplementedError


# ---- SGLang /v1/systemone (TypeSafe System One shape) -------------------------------------------


def systemone_question(q: Question) -> dict[str, Any]:
    if q.type == YES_NO:
        return {"type": YES_NO, "instructions": q.instructions}
    if q.type == "choice":
        return {
            "type": "choice",
            "instructions": q.instructions,
            "criteria": {o: d for o, d in zip(q.options, q.option_descriptions(), strict=True)},
        }
    return {
        "type": "score",
        "instructions": q.instructions,
        "criteria": [
            d if d is not None else f"level {o}" for o, d in zip(q.options, q.option_descriptions(), strict=True)
        ],
    }


def _probability_map(case: Case, q: Question, dist: Any, keys: Sequence[str], lat: float, raw: Any) -> Decision:
    """A {key: p} map (or a list in option order) → Decision over q.options; keys[i] names option i."""
    if isinstance(dist, list) and dist and all(isinstance(x, Mapping) for x in dist):
        try:
            dist = {str(x.get("key", x.get("level", x.get("option")))): x.get("probability", x.get("p")) for x in dist}
        except AttributeError:
            return Decision.failed(case, q, "malformed probability list", latency_s=lat, raw=raw)
    if isinstance(dist, list):
        if len(dist) != len(keys):
            return Decision.failed(
                case, q, f"{len(dist)} probabilities for {len(keys)} options", latency_s=lat, raw=raw
            )
        return normalise(case, q, dist, latency_s=lat, raw=raw)
    if not isinstance(dist, Mapping) or not dist:
        return Decision.failed(case, q, "no probabilities in the answer", latency_s=lat, raw=raw)
    unknown = [k for k in dist if str(k) not in keys]
    if unknown:
        return Decision.failed(
            case, q, f"unknown option {unknown[0]!r} (options: {list(keys)})", latency_s=lat, raw=raw
        )
    missing = [k for k in keys if k not in {str(x) for x in dist}]
    by_key = {str(k): v for k, v in dist.items()}
    values = [by_key.get(k, 0.0) for k in keys]
    if any(v is None for v in values):
        return Decision.failed(case, q, "null probability", latency_s=lat, raw=raw)
    return normalise(
        case, q, values, latency_s=lat, raw=raw, meta={"missing_options": len(missing)} if missing else None
    )


def _p_yes(case: Case, q: Question, p: Any, lat: float, raw: Any) -> Decision:
    if isinstance(p, bool) or p is None:
        return Decision.failed(case, q, "no P(yes) in the answer", latency_s=lat, raw=raw)
    try:
        p = float(p)
    except (TypeError, ValueError):
        return Decision.failed(case, q, f"P(yes) is not a number: {p!r:.60}", latency_s=lat, raw=raw)
    if not math.isfinite(p) or not 0.0 <= p <= 1.0:
        return Decision.failed(case, q, f"P(yes) = {p} is not a probability", latency_s=lat, raw=raw)
    if q.options != YES_NO_OPTIONS:
        return Decision.failed(
            case, q, f"yes/no answer for a question with options {q.options}", latency_s=lat, raw=raw
        )
    return normalise(case, q, [p, 1.0 - p], latency_s=lat, raw=raw)


class SystemOneClient(RouteClient):
    """SGLang ``/v1/systemone``: one request per case, every question of the case in it (no temperature)."""

    route = "/v1/systemone"

    def body(self, case: Case) -> dict[str, Any]:
        body: dict[str, Any] = {
            "state": case.state,
            "questions": {q.qid: systemone_question(q) for q in case.questions.values()},
        }
        if self.model:
            body["model"] = self.model
        return {**body, **self.extra_body}

    answer_keys = ("answers",)

    def parse(self, case: Case, q: Question, a: Any, lat: float) -> Decision:
        if not isinstance(a, Mapping):
            return Decision.failed(case, q, "no answer for this question", latency_s=lat, raw=a)
        if q.type == YES_NO:
            return _p_yes(case, q, a.get("noul"), lat, a)  # the route's own key for P(yes)
        if q.type == "score":  # keyed by level index, in the order the levels were sent
            return _probability_map(case, q, a.get("probabilities"), [str(i) for i in range(len(q.options))], lat, a)
        return _probability_map(case, q, a.get("probabilities"), list(q.options), lat, a)


# ---- SGLang /v1/decisions (OpenRouter alpha shape) ----------------------------------------------


def _level(option: str) -> Any:
    return int(option) if option.lstrip("-").isdigit() else option


def decisions_question(q: Question) -> dict[str, Any]:
    if q.type == YES_NO:
        return {"type": "boolean", "instructions": q.instructions}
    if q.type == "choice":
        return {
            "type": "choice",
            "instructions": q.instructions,
            "criteria": [{"key": o, "description": d} for o, d in zip(q.options, q.option_descriptions(), strict=True)],
        }
    return {
        "type": "score",
        "instructions": q.instructions,
        "criteria": [
            {"level": _level(o), "description": d} for o, d in zip(q.options, q.option_descriptions(), strict=True)
        ],
    }


class DecisionsClient(RouteClient):
    """SGLang ``/v1/decisions``: one request per case; accepts a per-request ``temperature``."""

    route = "/v1/decisions"

    def __init__(self, base_url: str, *, temperature: float | None = None, **kw: Any):
        super().__init__(base_url, **kw)
        self.temperature = temperature

    def body(self, case: Case) -> dict[str, Any]:
        body: dict[str, Any] = {
            "state": case.state,
            "questions": {q.qid: decisions_question(q) for q in case.questions.values()},
        }
        if self.model:
            body["model"] = self.model
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return {**body, **self.extra_body}

    answer_keys = ("answers", "decisions", "results")  # alpha API: the key has varied

    def parse(self, case: Case, q: Question, a: Any, lat: float) -> Decision:
        if not isinstance(a, Mapping):
            return Decision.failed(case, q, "no answer for this question", latency_s=lat, raw=a)
        if q.type == YES_NO:
            p = next((a[k] for k in ("probability", "p_true", "noul", "value") if k in a), None)
            return _p_yes(case, q, p, lat, a)
        dist = next((a[k] for k in ("probabilities", "distribution") if k in a), None)
        return _probability_map(case, q, dist, list(q.options), lat, a)
