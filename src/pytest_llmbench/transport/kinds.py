"""Request functions by kind: where a request of each kind goes and how its answer comes back.

Three kinds ship, each a function registered under its name (as vLLM's benchmarks register one request
function per endpoint):

* ``chat`` — a streamed chat completion on the engine's ``chat_path``;
* ``completions`` — a streamed raw-prompt completion on the engine's ``completions_path``;
* ``json`` — one JSON body in, one JSON answer out, on a route the caller names (a decision route, or
  a non-streamed chat request for logprobs or greedy text).

Streamed kinds return the :class:`~pytest_llmbench.transport.http.RawResponse` with its arrival times
(the workload turns it into a record); ``json`` returns a :class:`JsonReply` and never raises for a bad
answer. Routes come from the engine adapter, never from this module.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pytest_llmbench.transport.http import RawResponse, StreamClient, StreamError, bearer, perf_counter

if TYPE_CHECKING:
    from pytest_llmbench.engines.base import Engine


@dataclass(frozen=True)
class JsonReply:
    """The answer of a ``json`` request: the parsed body, or why there is none, and the seconds it took."""

    data: Any
    error: str | None
    latency_s: float

    @property
    def ok(self) -> bool:
        return self.error is None


async def send_stream(
    client: StreamClient,
    path: str,
    body: dict[str, Any] | bytes,
    *,
    timeout_s: float = 600.0,
    stall_timeout_s: float = 120.0,
) -> RawResponse:
    """POST ``body`` and keep the streamed answer with its arrival times; raises StreamError."""
    return await client.post(path, body, timeout=timeout_s, stall_timeout=stall_timeout_s)


async def send_json(
    client: StreamClient,
    path: str,
    body: dict[str, Any] | bytes,
    *,
    timeout_s: float = 120.0,
    stall_timeout_s: float | None = None,
) -> JsonReply:
    """POST ``body`` and parse the JSON answer; a transport failure, an HTTP error or a body that is not JSON
    becomes ``JsonReply.error`` (the request's reason), never an exception."""
    t0 = perf_counter()
    try:
        raw = await client.post(
            path, body, timeout=timeout_s, stall_timeout=stall_timeout_s or timeout_s, accept="application/json"
        )
    except StreamError as e:
        return JsonReply(None, f"transport: {e}"[:300], perf_counter() - t0)
    dt = raw.t_end - raw.t_start
    text = b"".join(raw.chunks)
    if raw.status != 200:
        return JsonReply(None, f"HTTP {raw.status}: {text[:200].decode('utf-8', 'replace')}", dt)
    try:
        return JsonReply(json.loads(text), None, dt)
    except ValueError:
        return JsonReply(None, f"response is not JSON: {text[:120].decode('utf-8', 'replace')!r}", dt)


@dataclass(frozen=True)
class RequestKind:
    """A kind of request: its function, whether it streams, and the engine's route for it (None: the
    caller names the route)."""

    name: str
    send: Callable[..., Awaitable[Any]]
    stream: bool
    route: Callable[[Engine], str] | None = None

    def path(self, engine: Engine, path: str | None = None) -> str:
        """The route to send to: ``path`` when given, else the engine's route for this kind."""
        if path:
            return path
        if self.route is None:
            raise ValueError(f"request kind {self.name!r} has no engine route; pass the route to send to")
        return self.route(engine)


KINDS: dict[str, RequestKind] = {}


def register(kind: RequestKind) -> RequestKind:
    """Add (or replace) a request kind."""
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> RequestKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown request kind {name!r} (known: {', '.join(sorted(KINDS))})") from None


register(RequestKind("chat", send_stream, stream=True, route=lambda engine: engine.chat_path))
register(RequestKind("completions", send_stream, stream=True, route=lambda engine: engine.completions_path))
register(RequestKind("json", send_json, stream=False))


def client_for_url(base_url: str, *, api_key: str | None = None) -> StreamClient:
    """A transport client for ``http://host:port`` (the base URL a server or a test double gives); with
    ``api_key``, every request carries it as a bearer token."""
    parts = urlsplit(base_url if "//" in base_url else f"http://{base_url}")
    if parts.scheme not in ("http", "") or not parts.hostname:
        raise ValueError(f"{base_url!r}: only plain http://host:port servers are supported")
    return StreamClient(parts.hostname, parts.port or 80, bearer(api_key))


def call_json(
    base_url: str, path: str, body: dict[str, Any], *, timeout_s: float = 120.0, api_key: str | None = None
) -> JsonReply:
    """One blocking ``json`` request (its own connection): for sequential checks outside a run."""

    async def one() -> JsonReply:
        client = client_for_url(base_url, api_key=api_key)
        try:
            return await send_json(client, path, body, timeout_s=timeout_s)
        finally:
            client.close()

    return asyncio.run(one())
