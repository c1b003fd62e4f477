"""Send many streamed requests at a fixed concurrency and record each one; never raise per request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pytest_llmbench.workload.client import StreamClient, StreamError
from pytest_llmbench.workload.records import RequestRecord, record_from_response

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer


def streaming_body(server: "LLMServer", body: dict[str, Any]) -> dict[str, Any]:
    """The request as sent: config-wide request fields, engine fields, then the caller's body."""
    out = {"model": server.config.name, **server.config.request, **server.engine.request_fields(server.config), **body}
    out["stream"] = True
    opts = dict(out.get("stream_options") or {})
    opts.setdefault("include_usage", True)
    out["stream_options"] = opts
    return out


async def run_requests_async(server: "LLMServer", bodies: Sequence[dict[str, Any]], *, concurrency: int = 1,
                             path: str | None = None, timeout_s: float = 600.0, stall_timeout_s: float = 120.0,
                             on_done: Callable[[RequestRecord], None] | None = None) -> list[RequestRecord]:
    path = path or server.engine.chat_path
    client = StreamClient("127.0.0.1", server.port)
    payloads = [json.dumps(streaming_body(server, b)).encode() for b in bodies]
    records: list[RequestRecord | None] = [None] * len(payloads)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(payloads)):
        queue.put_nowait(i)

    async def worker() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                raw = await client.post(path, payloads[i], timeout=timeout_s, stall_timeout=stall_timeout_s)
                rec = record_from_response(i, raw, server.engine)
            except StreamError as e:
                rec = RequestRecord(index=i, error=str(e))
            except OSError as e:
                rec = RequestRecord(index=i, error=f"connection error: {e}")
            records[i] = rec
            if on_done is not None:
                on_done(rec)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(payloads))))))
    finally:
        client.close()
    return [r for r in records if r is not None]


def run_requests(server: "LLMServer", bodies: Sequence[dict[str, Any]], *, concurrency: int = 1,
                 path: str | None = None, timeout_s: float = 600.0, stall_timeout_s: float = 120.0,
                 on_done: Callable[[RequestRecord], None] | None = None) -> list[RequestRecord]:
    """Blocking wrapper: stream every body at ``concurrency`` and return their records in order."""
    return asyncio.run(run_requests_async(server, bodies, concurrency=concurrency, path=path, timeout_s=timeout_s,
                                          stall_timeout_s=stall_timeout_s, on_done=on_done))
