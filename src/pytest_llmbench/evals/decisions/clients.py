"""Decision clients by name, and the one for a running server.

Each client turns cases into :class:`Decision` objects, one per question, and never raises for a bad
answer: an HTTP error, a body that is not JSON, a missing probability map, an option the question
does not have, or a NaN become failed decisions with a reason, because a run that drops what it could
not parse would look better than it is. The shapes: SGLang's ``/v1/systemone`` and ``/v1/decisions``
(:mod:`.routes`), and the first-token logprob fallback for engines without a decision route
(:mod:`.logprobs`); the common runner is :mod:`.runner`.
"""

from __future__ import annotations

from typing import Any

from pytest_llmbench.evals.decisions.logprobs import (
    LETTERS,
    LogprobClient,
    fallback_prompt,
    letter_probabilities,
    option_lines,
)
from pytest_llmbench.evals.decisions.routes import (
    DecisionsClient,
    RouteClient,
    SystemOneClient,
    decisions_question,
    systemone_question,
)
from pytest_llmbench.evals.decisions.runner import DecisionClient

CLIENTS: dict[str, type[DecisionClient]] = {
    "systemone": SystemOneClient,
    "decisions": DecisionsClient,
    "logprobs": LogprobClient,
}
#: Fields that only mean something on a chat route; a decision route does not get them.
CHAT_ONLY_FIELDS = ("chat_template_kwargs", "reasoning_effort", "separate_reasoning")


def client_for(server: Any, kind: str | None = None, **kw: Any) -> DecisionClient:
    """The decision client for a running :class:`~pytest_llmbench.server.LLMServer`.

    ``kind`` defaults to the client of the route the engine declares (``Engine.decision_route``) and to
    the logprob fallback on the engine's chat route otherwise; the config's ``request`` fields ride
    along on every request (e.g. ``chat_template_kwargs``).
    """
    cfg, engine = server.config, server.engine
    if kind is None:
        kind = next(
            (name for name, cls in CLIENTS.items() if engine.decision_route and cls.route == engine.decision_route),
            "logprobs",
        )
    if kind not in CLIENTS:
        raise ValueError(f"unknown decision client {kind!r} (known: {sorted(CLIENTS)})")
    extra = {**dict(cfg.request or {}), **dict(kw.pop("extra_body", None) or {})}
    if kind != "logprobs":
        extra = {k: v for k, v in extra.items() if k not in CHAT_ONLY_FIELDS}
    else:
        kw.setdefault("route", engine.chat_path)
    model = kw.pop("model", None)
    if model is None and cfg.model.kind == "hub":
        model = cfg.model.placeholder()
    kw.setdefault("api_key", getattr(cfg, "api_key", None))
    return CLIENTS[kind](server.base_url, model=model, extra_body=extra, **kw)


__all__ = [
    "CLIENTS",
    "LETTERS",
    "DecisionClient",
    "DecisionsClient",
    "LogprobClient",
    "RouteClient",
    "SystemOneClient",
    "client_for",
    "decisions_question",
    "fallback_prompt",
    "letter_probabilities",
    "option_lines",
    "systemone_question",
]
