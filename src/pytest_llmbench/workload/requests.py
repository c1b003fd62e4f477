"""Send many streamed requests at a fixed concurrency and record each one; never raise per request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

from pytest_llmbench.launchers.base import describe_exit
from pytest_llmbench.transport.http import StreamClient, StreamError, bearer
from pytest_llmbench.transport.kinds import get_kind
from pytest_llmbench.workload.records import RequestRecord, record_from_response

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer


def streaming_body(server: LLMServer, body: dict[str, Any]) -> dict[str, Any]:
    """The request as sent: config-wide request fields, engine fields, then the caller's body."""
    out = {"model": server.config.name, **server.config.request, **server.engine.request_fields(server.config), **body}
    out["stream"] = True
    opts = dict(out.get("stream_options") or {})
    opts.setdefault("include_usage", True)
    out["stream_options"] = opts
    return out


#: How often a running scenario checks that its server is still there.
WATCH_INTERVAL_S = 0.25


async def run_requests_async(
    server: LLMServer,
    bodies: Sequence[dict[str, Any]],
    *,
    concurrency: int = 1,
    kind: str = "chat",
    path: str | None = None,
    timeout_s: float = 600.0,
    stall_timeout_s: float = 120.0,
    on_done: Callable[[RequestRecord], None] | None = None,
    send_at: Sequence[float] | None = None,
) -> list[RequestRecord]:
    """Every body gets a record, in order. ``kind`` is a streamed request kind (``chat``, ``completions``:
    :mod:`pytest_llmbench.transport.kinds`) and picks the engine's route unless ``path`` overrides it.

    A request that fails is recorded with its reason; a server that exits, or sends nothing on any
    connection for ``stall_timeout_s``, ends the whole run at once: the requests in flight and those not
    yet sent are recorded with that reason (one stall budget per run, not one per request).

    ``send_at`` (open loop, workload/arrivals.py): body i is sent at that offset (s) from the start
    whatever else is in flight, at most ``concurrency`` at once; each record carries its scheduled
    offset and the client's send lag (from the later of its slot and the schedule to the send)."""
    request_kind = get_kind(kind)
    if not request_kind.stream:
        raise ValueError(f"run_requests streams; request kind {kind!r} does not (use transport.kinds.send_json)")
    path = request_kind.path(server.engine, path)
    send = request_kind.send
    # getattr: test doubles and third-party servers may carry a config without the key
    client = StreamClient("127.0.0.1", server.port, bearer(getattr(server.config, "api_key", None)))
    payloads = [json.dumps(streaming_body(server, b)).encode() for b in bodies]
    records: list[RequestRecord | None] = [None] * len(payloads)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(payloads)):
        queue.put_nowait(i)
    gone: list[str] = []  # why the run was ended early (at most one reason)

    def finish(rec: RequestRecord) -> None:
        records[rec.index] = rec
        if on_done is not None:
            on_done(rec)

    async def one(i: int, due: float | None = None) -> None:
        sent = perf_counter()
        try:
            # The per-request stall limit sits just past the scenario's, so that when every connection
            # is silent the scenario-level watch (which ends the whole run) fires first.
            raw = await send(
                client,
                path,
                payloads[i],
                timeout_s=timeout_s,
                stall_timeout_s=stall_timeout_s + 4 * WATCH_INTERVAL_S,
            )
            rec = record_from_response(i, raw, server.engine)
        except asyncio.CancelledError:
            if not gone:
                raise
            rec = RequestRecord(index=i, error=gone[0])
        except StreamError as e:
            rec = RequestRecord(index=i, error=str(e))
        except OSError as e:
            rec = RequestRecord(index=i, error=f"connection error: {e}")
        if due is not None and send_at is not None:
            rec.scheduled_s = send_at[i]
            rec.send_lag_s = max(0.0, sent - due)
        finish(rec)

    async def worker() -> None:
        while not gone:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await one(i)

    async def opener() -> None:
        """Open loop: start each request at its scheduled time; the semaphore caps requests in flight."""
        assert send_at is not None
        slots = asyncio.Semaphore(max(1, concurrency))
        t0 = perf_counter()
        started: list[asyncio.Task] = []

        async def timed(i: int) -> None:
            async with slots:
                await one(i, max(t0 + send_at[i], perf_counter()))

        try:
            for i in range(len(payloads)):
                delay = t0 + send_at[i] - perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                if gone:
                    break
                started.append(asyncio.ensure_future(timed(i)))
            await asyncio.gather(*started)
        except asyncio.CancelledError:
            for t in started:
                t.cancel()
            await asyncio.gather(*started, return_exceptions=True)
            raise

    async def watch(tasks: list[asyncio.Task]) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if not server.alive():
                gone.append(f"server exited ({describe_exit(server.handle.exit_code())})")
            elif (quiet := client.quiet_for()) is not None and quiet >= stall_timeout_s:
                gone.append(
                    f"server not responding: no data on any connection for {quiet:.1f} s "
                    f"(stall_timeout_s={stall_timeout_s:g})"
                )
            if gone:
                for t in tasks:
                    t.cancel()
                return

    if send_at is not None:
        if len(send_at) != len(payloads):
            raise ValueError(f"send_at has {len(send_at)} times for {len(payloads)} requests")
        tasks = [asyncio.ensure_future(opener())]
    else:
        tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(payloads))))]
    watcher = asyncio.ensure_future(watch(tasks))
    try:
        await asyncio.gather(*tasks, return_exceptions=bool(gone))
    except asyncio.CancelledError:
        if not gone:
            raise
    finally:
        watcher.cancel()
        client.close()
    if watcher.done() and not watcher.cancelled() and (broken := watcher.exception()) is not None:
        raise broken  # a broken watch must not pass for a healthy server
    if gone:
        for i, rec in enumerate(records):
            if rec is None:
                finish(RequestRecord(index=i, error=f"not sent: {gone[0]}"))
    return [r for r in records if r is not None]


def run_requests(
    server: LLMServer,
    bodies: Sequence[dict[str, Any]],
    *,
    concurrency: int = 1,
    kind: str = "chat",
    path: str | None = None,
    timeout_s: float = 600.0,
    stall_timeout_s: float = 120.0,
    on_done: Callable[[RequestRecord], None] | None = None,
    send_at: Sequence[float] | None = None,
) -> list[RequestRecord]:
    """Blocking wrapper: stream every body at ``concurrency`` and return their records in order."""
    return asyncio.run(
        run_requests_async(
            server,
            bodies,
            concurrency=concurrency,
            kind=kind,
            path=path,
            timeout_s=timeout_s,
            stall_timeout_s=stall_timeout_s,
            on_done=on_done,
            send_at=send_at,
        )
    )
