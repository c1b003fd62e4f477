"""Decision clients: SGLang's ``/v1/systemone`` and ``/v1/decisions``, and a logprob fallback.

Each client turns cases into :class:`Decision` objects, one per question, and never raises for a bad
answer: an HTTP error, a body that is not JSON, a missing probability map, an option the question
does not have, or a NaN become failed decisions with a reason, because a run that drops what it could
not parse would look better than it is.

The fallback serves engines without a decision route (llama.cpp here): one /v1/chat/completions
request per question, options listed as letters, ``max_tokens: 1`` at temperature 0 with
``logprobs``/``top_logprobs: 20``, and the label probabilities read from the first generated token's
top logprobs, renormalised over the options.
"""

from __future__ import annotations

import asyncio
import json
import math
import string
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx

from pytest_llmbench.evals.decisions.schema import NOUL_OPTIONS, Case, Decision, Question, normalise

LETTERS = string.ascii_uppercase
#: Connection errors that mean "the pooled keep-alive connection was closed before it answered"
#: (llama-server does this): retried once, not counted as a failed decision.
_RECONNECT = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class DecisionClient:
    """Common runner: bounded concurrency over cases, every failure recorded, results in input order."""

    route: str = ""

    def __init__(self, base_url: str, *, model: str | None = None, concurrency: int = 4,
                 timeout_s: float = 120.0, extra_body: Mapping[str, Any] | None = None):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.concurrency = max(1, int(concurrency))
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})

    # Subclasses answer one case.
    async def decide_case(self, http: httpx.AsyncClient, case: Case) -> list[Decision]:
        raise NotImplementedError

    async def arun(self, cases: Sequence[Case], *, progress: Callable[[int, int], None] | None = None) -> list[Decision]:
        sem = asyncio.Semaphore(self.concurrency)
        done = 0
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        async with httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout_s, limits=limits) as http:

            async def one(case: Case) -> list[Decision]:
                nonlocal done
                async with sem:
                    try:
                        out = await self.decide_case(http, case)
                    except Exception as e:  # a bug or an unexpected transport error: fail the case, not the run
                        out = [Decision.failed(case, q, f"client error: {type(e).__name__}: {e}"[:300])
                               for q in case.questions.values()]
                done += 1
                if progress is not None:
                    progress(done, len(cases))
                return out

            per_case = await asyncio.gather(*(one(c) for c in cases))
        return [d for ds in per_case for d in ds]

    def run(self, cases: Sequence[Case], *, progress: Callable[[int, int], None] | None = None) -> list[Decision]:
        """Answer every question of ``cases``; one Decision per question, failures included."""
        return asyncio.run(self.arun(cases, progress=progress))

    async def _post(self, http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> tuple[Any, str | None, float]:
        """POST JSON; returns (parsed body, error reason or None, seconds)."""
        t0 = time.perf_counter()
        for attempt in range(2):
            try:
                r = await http.post(path, json=body)
                break
            except _RECONNECT as e:
                if attempt == 1:
                    return None, f"transport: {type(e).__name__}: {e}"[:300], time.perf_counter() - t0
            except httpx.HTTPError as e:
                return None, f"transport: {type(e).__name__}: {e}"[:300], time.perf_counter() - t0
        dt = time.perf_counter() - t0
        if r.status_code != 200:
            return None, f"HTTP {r.status_code}: {r.text[:200]}", dt
        try:
            return r.json(), None, dt
        except ValueError:
            return None, f"response is not JSON: {r.text[:120]!r}", dt


class RouteClient(DecisionClient):
    """A decision route (SGLang's /v1/systemone, /v1/decisions): one request answers every question of
    a case; any problem with the response fails each of its questions with the reason."""

    answer_keys: tuple[str, ...] = ("answers",)

    async def decide_case(self, http: httpx.AsyncClient, case: Case) -> list[Decision]:
        data, err, lat = await self._post(http, self.route, self.body(case))
        if err is None and not isinstance(data, Mapping):
            err = "response is not a JSON object"
        if err is not None:
            return [Decision.failed(case, q, err, latency_s=lat) for q in case.questions.values()]
        answers = next((data[k] for k in self.answer_keys if isinstance(data.get(k), Mapping)), None)
        if answers is None:
            return [Decision.failed(case, q, "no 'answers' object in the response", latency_s=lat, raw=data)
                    for q in case.questions.values()]
        return [self.parse(case, q, answers.get(q.qid), lat) for q in case.questions.values()]

    def body(self, case: Case) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, case: Case, q: Question, a: Any, lat: float) -> Decision:
        raise NotImplementedError


# ---- SGLang /v1/systemone (TypeSafe System One shape) -------------------------------------------

def systemone_question(q: Question) -> dict[str, Any]:
    if q.type == "noul":
        return {"type": "noul", "instructions": q.instructions}
    if q.type == "choice":
        return {"type": "choice", "instructions": q.instructions,
                "criteria": {o: d for o, d in zip(q.options, _descs(q))}}
    return {"type": "score", "instructions": q.instructions,
            "criteria": [d if d is not None else f"level {o}" for o, d in zip(q.options, _descs(q))]}


def _descs(q: Question) -> tuple[str | None, ...]:
    return q.descriptions if len(q.descriptions) == len(q.options) else (None,) * len(q.options)


def _probability_map(case: Case, q: Question, dist: Any, keys: Sequence[str], lat: float, raw: Any) -> Decision:
    """A {key: p} map (or a list in option order) → Decision over q.options; keys[i] names option i."""
    if isinstance(dist, list) and dist and all(isinstance(x, Mapping) for x in dist):
        try:
            dist = {str(x.get("key", x.get("level", x.get("option")))): x.get("probability", x.get("p"))
                    for x in dist}
        except AttributeError:
            return Decision.failed(case, q, "malformed probability list", latency_s=lat, raw=raw)
    if isinstance(dist, list):
        if len(dist) != len(keys):
            return Decision.failed(case, q, f"{len(dist)} probabilities for {len(keys)} options", latency_s=lat, raw=raw)
        return normalise(case, q, dist, latency_s=lat, raw=raw)
    if not isinstance(dist, Mapping) or not dist:
        return Decision.failed(case, q, "no probabilities in the answer", latency_s=lat, raw=raw)
    unknown = [k for k in dist if str(k) not in keys]
    if unknown:
        return Decision.failed(case, q, f"unknown option {unknown[0]!r} (options: {list(keys)})", latency_s=lat, raw=raw)
    missing = [k for k in keys if k not in {str(x) for x in dist}]
    by_key = {str(k): v for k, v in dist.items()}
    values = [by_key.get(k, 0.0) for k in keys]
    if any(v is None for v in values):
        return Decision.failed(case, q, "null probability", latency_s=lat, raw=raw)
    return normalise(case, q, values, latency_s=lat, raw=raw, meta={"missing_options": len(missing)} if missing else None)


def _p_yes(case: Case, q: Question, p: Any, lat: float, raw: Any) -> Decision:
    if isinstance(p, bool) or p is None:
        return Decision.failed(case, q, "no P(yes) in the answer", latency_s=lat, raw=raw)
    try:
        p = float(p)
    except (TypeError, ValueError):
        return Decision.failed(case, q, f"P(yes) is not a number: {p!r:.60}", latency_s=lat, raw=raw)
    if not math.isfinite(p) or not 0.0 <= p <= 1.0:
        return Decision.failed(case, q, f"P(yes) = {p} is not a probability", latency_s=lat, raw=raw)
    if q.options != NOUL_OPTIONS:
        return Decision.failed(case, q, f"yes/no answer for a question with options {q.options}", latency_s=lat, raw=raw)
    return normalise(case, q, [p, 1.0 - p], latency_s=lat, raw=raw)


class SystemOneClient(RouteClient):
    """SGLang ``/v1/systemone``: one request per case, every question of the case in it (no temperature)."""

    route = "/v1/systemone"

    def body(self, case: Case) -> dict[str, Any]:
        body: dict[str, Any] = {"state": case.state, "questions": {q.qid: systemone_question(q) for q in case.questions.values()}}
        if self.model:
            body["model"] = self.model
        return {**body, **self.extra_body}

    answer_keys = ("answers",)

    def parse(self, case: Case, q: Question, a: Any, lat: float) -> Decision:
        if not isinstance(a, Mapping):
            return Decision.failed(case, q, "no answer for this question", latency_s=lat, raw=a)
        if q.type == "noul":
            return _p_yes(case, q, a.get("noul"), lat, a)
        if q.type == "score":  # keyed by level index, in the order the levels were sent
            return _probability_map(case, q, a.get("probabilities"), [str(i) for i in range(len(q.options))], lat, a)
        return _probability_map(case, q, a.get("probabilities"), list(q.options), lat, a)


# ---- SGLang /v1/decisions (OpenRouter alpha shape) ----------------------------------------------

def _level(option: str) -> Any:
    return int(option) if option.lstrip("-").isdigit() else option


def decisions_question(q: Question) -> dict[str, Any]:
    if q.type == "noul":
        return {"type": "boolean", "instructions": q.instructions}
    if q.type == "choice":
        return {"type": "choice", "instructions": q.instructions,
                "criteria": [{"key": o, "description": d} for o, d in zip(q.options, _descs(q))]}
    return {"type": "score", "instructions": q.instructions,
            "criteria": [{"level": _level(o), "description": d} for o, d in zip(q.options, _descs(q))]}


class DecisionsClient(RouteClient):
    """SGLang ``/v1/decisions``: one request per case; accepts a per-request ``temperature``."""

    route = "/v1/decisions"

    def __init__(self, base_url: str, *, temperature: float | None = None, **kw: Any):
        super().__init__(base_url, **kw)
        self.temperature = temperature

    def body(self, case: Case) -> dict[str, Any]:
        body: dict[str, Any] = {"state": case.state, "questions": {q.qid: decisions_question(q) for q in case.questions.values()}}
        if self.model:
            body["model"] = self.model
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return {**body, **self.extra_body}

    answer_keys = ("answers", "decisions", "results")  # alpha API: the key has varied

    def parse(self, case: Case, q: Question, a: Any, lat: float) -> Decision:
        if not isinstance(a, Mapping):
            return Decision.failed(case, q, "no answer for this question", latency_s=lat, raw=a)
        if q.type == "noul":
            p = next((a[k] for k in ("probability", "p_true", "noul", "value") if k in a), None)
            return _p_yes(case, q, p, lat, a)
        dist = next((a[k] for k in ("probabilities", "distribution") if k in a), None)
        return _probability_map(case, q, dist, list(q.options), lat, a)


# ---- logprob fallback on /v1/chat/completions --------------------------------------------------

def option_lines(q: Question) -> list[str]:
    descs = _descs(q)
    lines = []
    for letter, opt, desc in zip(LETTERS, q.options, descs):
        if q.type == "noul":
            lines.append(f"{letter}. {opt}")
        elif q.type == "score":
            lines.append(f"{letter}. level {opt}" + (f": {desc}" if desc else ""))
        else:
            lines.append(f"{letter}. {opt}" + (f": {desc}" if desc else ""))
    return lines


def fallback_prompt(case: Case, q: Question) -> str:
    """The one user message of a fallback request: state, question, lettered options, answer format."""
    return (f"{case.state_text()}\n\nQuestion: {q.instructions}\nOptions:\n" + "\n".join(option_lines(q))
            + "\n\nAnswer with the letter of the best option only.")


def _letter_of(token: str) -> str | None:
    t = token.strip().rstrip(".):")
    return t if len(t) == 1 and t in LETTERS else None


def letter_probabilities(top: Iterable[Mapping[str, Any]], n_options: int) -> tuple[list[float] | None, str | None, int]:
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
            "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": self.top_logprobs,
            "chat_template_kwargs": {"enable_thinking": False},
        }
        if self.model:
            body["model"] = self.model
        return {**body, **self.extra_body}

    async def decide_case(self, http: httpx.AsyncClient, case: Case) -> list[Decision]:
        return [await self.decide_question(http, case, q) for q in case.questions.values()]

    async def decide_question(self, http: httpx.AsyncClient, case: Case, q: Question) -> Decision:
        try:
            body = self.body(case, q)
        except ValueError as e:
            return Decision.failed(case, q, str(e))
        data, err, lat = await self._post(http, self.route, body)
        if err is not None:
            return Decision.failed(case, q, err, latency_s=lat)
        try:
            content = data["choices"][0]["logprobs"]["content"]
            top = content[0]["top_logprobs"]
        except (KeyError, IndexError, TypeError):
            return Decision.failed(case, q, "no choices[0].logprobs.content[0].top_logprobs in the response",
                                   latency_s=lat, raw=data)
        if not isinstance(top, list):
            return Decision.failed(case, q, "top_logprobs is not a list", latency_s=lat, raw=data)
        probs, reason, missing = letter_probabilities(top, len(q.options))
        if probs is None:
            return Decision.failed(case, q, reason or "no probabilities", latency_s=lat, raw=top)
        meta = {"missing_options": missing, "first_token": content[0].get("token")}
        return normalise(case, q, probs, latency_s=lat, raw=None, meta=meta)


CLIENTS: dict[str, type[DecisionClient]] = {
    "systemone": SystemOneClient,
    "decisions": DecisionsClient,
    "logprobs": LogprobClient,
}


def client_for(server: Any, kind: str | None = None, **kw: Any) -> DecisionClient:
    """The decision client for a running :class:`~pytest_llmbench.server.LLMServer`.

    ``kind`` defaults to the SGLang route for sglang configs and the logprob fallback otherwise; the
    config's ``request`` fields ride along on every request (e.g. ``chat_template_kwargs``).
    """
    cfg = server.config
    if kind is None:
        kind = "systemone" if cfg.engine == "sglang" else "logprobs"
    if kind not in CLIENTS:
        raise ValueError(f"unknown decision client {kind!r} (known: {sorted(CLIENTS)})")
    extra = {**dict(cfg.request or {}), **dict(kw.pop("extra_body", None) or {})}
    if kind != "logprobs":  # chat-only fields do not belong on a decision route
        extra = {k: v for k, v in extra.items() if k not in ("chat_template_kwargs", "reasoning_effort", "separate_reasoning")}
    model = kw.pop("model", None)
    if model is None and cfg.model.kind == "hub":
        model = cfg.model.placeholder()
    return CLIENTS[kind](server.base_url, model=model, extra_body=extra, **kw)


def answers_jsonl(decisions: Iterable[Decision]) -> str:
    """Every decision as one JSON line (answers.jsonl beside the results)."""
    return "".join(json.dumps(d.to_json()) + "\n" for d in decisions)
