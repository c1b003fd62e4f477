"""The one HTTP transport for requests to a served model: POSTs on a raw asyncio protocol, timestamps
taken before parsing.

Why not httpx/aiohttp here: at hundreds of concurrent streams a client that parses every SSE line as
it arrives falls behind the server, and its own backlog shows up as TTFT/ITL (REFERENCE.md: a plain
httpx loop sustains a third of sglang's aiohttp client). This protocol does almost nothing per
network read — take ``perf_counter()``, strip HTTP chunk framing, keep ``(time, bytes)`` — and parses
the server-sent events once the stream has ended (:mod:`pytest_llmbench.transport.sse`). Numbers from
``experiments/client/client_overhead.py`` justify it. Non-streamed JSON routes go through it too
(:mod:`pytest_llmbench.transport.kinds`), so one connection pool and one reconnect rule serve every
request to the model; httpx stays the client for the control plane (health, flush, tokenize).

Keep-alive connections are pooled per host; a pooled connection the server closed before answering
(llama-server does this on its own) is reconnected once and not counted as a server failure.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, cast

perf_counter = time.perf_counter


class StreamError(Exception):
    """A request failed; the message is the reason recorded for it."""


@dataclass
class RawResponse:
    """A finished response: body bytes in arrival order (HTTP framing removed), each with its arrival time.

    Two parallel lists rather than (time, bytes) tuples: floats, bytes and two lists are invisible to the
    cyclic GC, thousands of tuples per stream are not.
    """

    status: int
    headers: dict[str, str]
    times: list[float]  # times[i]: perf_counter() when chunks[i] arrived
    chunks: list[bytes]
    t_start: float
    t_end: float


class _StreamProtocol(asyncio.Protocol):
    """One HTTP/1.1 exchange at a time on one connection."""

    __slots__ = (
        "_head",
        "_left",
        "_mode",
        "_pending",
        "_skip",
        "_trail",
        "chunks",
        "closed",
        "done",
        "got_bytes",
        "headers",
        "keep_alive",
        "last_t",
        "status",
        "times",
        "transport",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.done: asyncio.Future[None] | None = None
        # After a chunked body's last chunk ("0\r\n") the trailer section and its closing CRLF may still
        # be on the way (llama-server sends that CRLF in a separate write): those bytes belong to the
        # previous response, never to the next one on this connection. None: nothing pending.
        self._trail: bytes | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # create_connection: a stream transport

    def begin(self, loop: asyncio.AbstractEventLoop) -> None:
        self.done = loop.create_future()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.times: list[float] = []
        self.chunks: list[bytes] = []
        self._head = b""
        self._mode = ""  # "chunked" | "length" | "close"
        self._left = 0
        self._pending = b""
        self._skip = 0
        self.got_bytes = False
        self.last_t = perf_counter()
        self.keep_alive = True

    def data_received(self, data: bytes) -> None:
        t = perf_counter()
        if self._trail is not None:
            data = self._eat_trailer(data)
            if not data:
                return
        self.last_t = t
        self.got_bytes = True
        if self.done is None or self.done.done():
            return
        if not self._mode:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self._head[:end], self._head[end + 4 :]
            self._head = b""
            lines = head.decode("latin-1").split("\r\n")
            try:
                self.status = int(lines[0].split(" ", 2)[1])
            except (IndexError, ValueError):
                self._fail(StreamError(f"bad HTTP status line {lines[0][:80]!r}"))
                return
            for line in lines[1:]:
                k, _, v = line.partition(":")
                self.headers[k.strip().lower()] = v.strip()
            connection = self.headers.get("connection", "").lower()
            if connection == "close" or (lines[0].startswith("HTTP/1.0") and connection != "keep-alive"):
                self.keep_alive = False
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                self._mode = "chunked"
            elif "content-length" in self.headers:
                self._mode = "length"
                self._left = int(self.headers["content-length"])
            else:
                self._mode = "close"
                self.keep_alive = False
            if not data:
                if self._mode == "length" and self._left == 0:
                    self._finish()
                return
        if self._mode == "chunked":
            self._feed_chunked(data, t)
        elif self._mode == "length":
            self.times.append(t)
            self.chunks.append(data)
            self._left -= len(data)
            if self._left <= 0:
                self._finish()
        else:
            self.times.append(t)
            self.chunks.append(data)

    def _feed_chunked(self, data: bytes, t: float) -> None:
        if self._pending:
            data = self._pending + data
            self._pending = b""
        pos, n = 0, len(data)
        while pos < n:
            if self._left:
                take = min(self._left, n - pos)
                self.times.append(t)
                self.chunks.append(data[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._skip = 2  # CRLF after chunk data
            elif self._skip:
                step = min(self._skip, n - pos)
                pos += step
                self._skip -= step
            else:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    self._pending = data[pos:]
                    return
                try:
                    size = int(data[pos:eol].split(b";", 1)[0], 16)
                except ValueError:
                    self._fail(StreamError(f"bad chunk size line {data[pos:eol][:40]!r}"))
                    return
                pos = eol + 2
                if size == 0:
                    self._trail = b""
                    self._eat_trailer(data[pos:])  # bytes past the trailer answer nothing: dropped
                    self._finish()
                    return
                self._left = size

    def _eat_trailer(self, data: bytes) -> bytes:
        """Consume the end of the previous chunked body (trailer fields, then CRLF); return what follows."""
        buf = (self._trail or b"") + data  # called while a trailer is pending (_trail is bytes)
        if buf.startswith(b"\r\n"):
            self._trail = None
            return buf[2:]
        if buf.startswith(b"HTTP/"):  # a server that skipped the final CRLF: this is the next response
            self._trail = None
            return buf
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            self._trail = None
            return buf[end + 4 :]
        self._trail = buf
        return b""

    def _finish(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def _fail(self, exc: Exception) -> None:
        self.keep_alive = False
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            if self._mode == "close":
                self.done.set_result(None)
            else:
                self._fail(_Disconnected(self.got_bytes, exc, answered=self.status != 0))


class _Disconnected(StreamError):
    def __init__(self, got_bytes: bool, exc: Exception | None, answered: bool = False):
        self.got_bytes = got_bytes
        self.answered = answered  # a status line arrived: the server took the request
        why = f": {exc}" if exc else ""
        super().__init__(
            (
                "server closed the connection mid-response"
                if got_bytes
                else "server disconnected without sending a response"
            )
            + why
        )


def bearer(api_key: str | None) -> dict[str, str]:
    """The header a server started with an API key (``--api-key``) wants; none without a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


@dataclass
class StreamClient:
    """A tiny HTTP/1.1 client for streamed POSTs to one host, with a keep-alive pool. ``headers`` go on
    every request (``Authorization`` for a server that wants an API key)."""

    host: str
    port: int
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # repr=False: it may hold a key
    _idle: list[_StreamProtocol] = field(default_factory=list)
    _active: set[_StreamProtocol] = field(default_factory=set)

    def quiet_for(self) -> float | None:
        """Seconds since any in-flight request last received a byte (None: nothing in flight) — how a
        scenario tells a hung server from one slow request."""
        if not self._active:
            return None
        return perf_counter() - max(p.last_t for p in self._active)

    async def _connect(self) -> _StreamProtocol:
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_connection(_StreamProtocol, self.host, self.port)
        return proto

    async def post(
        self,
        path: str,
        body: dict[str, Any] | bytes,
        *,
        timeout: float = 600.0,
        stall_timeout: float = 120.0,
        headers: dict[str, str] | None = None,
        accept: str = "text/event-stream",
    ) -> RawResponse:
        """POST and read the whole (streamed) response; raise StreamError on any failure."""
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in {**self.headers, **(headers or {})}.items())
        request = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Accept: {accept}\r\n{extra}Content-Length: {len(payload)}\r\n\r\n"
        ).encode() + payload
        for attempt in (0, 1):
            reused = bool(self._idle)
            proto = self._idle.pop() if reused else None
            if proto is None or proto.closed:
                reused = False
                try:
                    proto = await self._connect()
                except OSError as e:
                    raise StreamError(f"cannot connect to {self.host}:{self.port}: {e.strerror or e}") from None
            try:
                return await self._exchange(proto, request, timeout, stall_timeout)
            except _Disconnected as e:
                if reused and not e.answered and attempt == 0:
                    continue  # the server dropped an idle pooled connection: reconnect, not a failure
                raise
        raise AssertionError("unreachable")

    async def _exchange(self, proto: _StreamProtocol, request: bytes, timeout: float, stall: float) -> RawResponse:
        loop = asyncio.get_running_loop()
        proto.begin(loop)
        self._active.add(proto)
        transport, done = proto.transport, proto.done
        assert transport is not None and done is not None  # connected, and begin() made the future
        t_start = perf_counter()
        transport.write(request)
        deadline = t_start + timeout
        timer: asyncio.TimerHandle  # the armed one; watchdog re-arms it

        # One timer per request, re-armed only when it fires: the total deadline and the stall limit are
        # checked without waking the request's task or allocating anything per network read.
        def watchdog() -> None:
            nonlocal timer
            if done.done():
                return
            now = perf_counter()
            if now >= deadline:
                done.set_exception(StreamError(f"timed out after {timeout:g} s"))
            elif now - proto.last_t >= stall:
                done.set_exception(StreamError(f"stream stalled: no data for {stall:g} s"))
            else:
                timer = loop.call_later(max(min(deadline - now, stall - (now - proto.last_t)), 0.001), watchdog)

        timer = loop.call_later(min(timeout, stall), watchdog)
        try:
            await done
        except BaseException:
            transport.abort()
            raise
        finally:
            timer.cancel()
            self._active.discard(proto)
        t_end = perf_counter()
        if proto.keep_alive and not proto.closed:
            self._idle.append(proto)
        else:
            transport.close()
        return RawResponse(proto.status, proto.headers, proto.times, proto.chunks, t_start, t_end)

    def close(self) -> None:
        for p in self._idle:
            if p.transport is not None:
                p.transport.close()
        self._idle.clear()
