"""Server-sent events → JSON objects, each stamped with when its last byte arrived.

The transport (:mod:`pytest_llmbench.transport.http`) keeps a streamed body as (arrival time, bytes)
pieces and does nothing else per network read; this module parses them once the stream has ended.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from pytest_llmbench.transport.http import StreamError


@dataclass
class SSEEvent:
    t: float  # arrival time of the bytes that completed the event
    data: dict[str, Any]


def parse_sse(pieces: list[tuple[float, bytes]]) -> list[SSEEvent]:
    """Split a streamed body into JSON events, each stamped with when its last byte arrived.

    Raises StreamError on a non-JSON ``data:`` payload (naming the first bytes of it).
    """
    times, datas = parse_sse_columns([t for t, _ in pieces], [b for _, b in pieces])
    return [SSEEvent(t, d) for t, d in zip(times, datas, strict=True)]


# The C scanner: one value at an index, no json.loads wrapper work. typeshed's JSONDecoder omits
# scan_once (JSONDecoder.__init__ sets it), hence the ignore; the annotation is the scanner's signature.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def parse_sse_columns(arrivals: list[float], chunks: list[bytes]) -> tuple[list[float], list[dict[str, Any]]]:
    """:func:`parse_sse` on a body given as parallel lists (arrival time of each chunk, the chunks), giving
    parallel lists (arrival time of each event, the event objects), without per-event objects.

    Fast path for the common stream shape (every event one ``data: {json}`` line, LF line endings): one
    pass that scans each payload with the C JSON scanner and requires the value to end exactly at the
    payload's end. Anything else (CRLF, comments, multi-line data, a bad payload) takes the general path,
    which also produces the exact error.
    """
    if not chunks:
        return [], []
    body = b"".join(chunks)
    if b"\r" not in body:
        fast = _parse_fast(arrivals, chunks, body)
        if fast is not None:
            return fast
    events = _parse_general(list(zip(arrivals, chunks, strict=True)), body)
    return [e.t for e in events], [e.data for e in events]


def _parse_fast(
    arrivals: list[float], chunks: list[bytes], body: bytes
) -> tuple[list[float], list[dict[str, Any]]] | None:
    ends = list(accumulate(map(len, chunks)))
    last = len(chunks) - 1
    scan = _scan_once
    times: list[float] = []
    datas: list[dict[str, Any]] = []
    pos = 0
    try:
        for blk in body.split(b"\n\n"):
            pos += len(blk) + 2  # offset just past this event's blank line
            if not blk:
                continue
            if blk[:6] != b"data: " or b"\n" in blk:
                return None
            if blk == b"data: [DONE]":
                continue
            text = blk.decode()
            obj, end = scan(text, 6)
            if end != len(text) or type(obj) is not dict:
                return None
            datas.append(obj)
            idx = bisect_left(ends, pos)
            times.append(arrivals[idx if idx < last else last])
    except (StopIteration, ValueError):  # ValueError covers JSONDecodeError and UnicodeDecodeError
        return None
    return times, datas


def _parse_general(pieces: list[tuple[float, bytes]], body: bytes) -> list[SSEEvent]:
    ends, total = [], 0
    for _, b in pieces:
        total += len(b)
        ends.append(total)
    body = body.replace(b"\r\n", b"\n")
    if len(body) != total:  # CRLF line endings: map positions on the normalised body conservatively
        ends = [int(e * len(body) / total) for e in ends]
    out: list[SSEEvent] = []
    pos = 0
    while True:
        end = body.find(b"\n\n", pos)
        if end < 0:
            tail = body[pos:].strip()
            if tail:
                _event(tail, pieces[-1][0], out)
            break
        block = body[pos:end]
        idx = bisect_left(ends, end + 2)
        _event(block, pieces[min(idx, len(pieces) - 1)][0], out)
        pos = end + 2
    return out


def _event(block: bytes, t: float, out: list[SSEEvent]) -> None:
    data_lines = [line[5:].lstrip() for line in block.split(b"\n") if line.startswith(b"data:")]
    if not data_lines:
        if block.strip() and not block.lstrip().startswith((b":", b"event:", b"id:", b"retry:")):
            raise StreamError(f"non-SSE bytes in stream: {block[:80]!r}")
        return
    payload = b"\n".join(data_lines)
    if payload.strip() == b"[DONE]":
        return
    try:
        data = json.loads(payload)
    except ValueError:
        raise StreamError(f"non-JSON chunk: {payload[:80]!r}") from None
    if not isinstance(data, dict):
        raise StreamError(f"non-object JSON chunk: {payload[:80]!r}")
    out.append(SSEEvent(t, data))
