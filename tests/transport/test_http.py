"""The raw asyncio transport on its own: what it sends, and the body it keeps with arrival times
(a scripted raw-socket server, not an engine double)."""

import asyncio
import time

import pytest

from pytest_llmbench.transport.http import StreamClient, StreamError
from tests.scripted_http import STREAM_HEAD, chunk, read_request, sse


def read_head(conn) -> str:
    """The request line and headers, as the client wrote them."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    return data.split(b"\r\n\r\n")[0].decode()


def test_chunked_body_is_kept_in_arrival_order_with_increasing_times(scripted):
    heads = []

    def handler(conn, srv):
        heads.append(read_head(conn))
        conn.sendall(STREAM_HEAD + chunk(sse({"i": 0})))
        time.sleep(0.05)
        conn.sendall(chunk(sse({"i": 1})) + chunk(b""))

    srv = scripted(handler)
    client = StreamClient("127.0.0.1", srv.port)

    async def go():
        try:
            assert client.quiet_for() is None  # nothing in flight
            return await client.post("/v1/chat/completions", {"x": 1})
        finally:
            client.close()

    raw = asyncio.run(go())
    assert raw.status == 200 and b"".join(raw.chunks) == sse({"i": 0}) + sse({"i": 1})
    assert raw.times == sorted(raw.times) and raw.times[-1] - raw.times[0] >= 0.04
    assert raw.t_start <= raw.times[0] <= raw.t_end
    head = heads[0]
    assert head.startswith("POST /v1/chat/completions HTTP/1.1") and "Accept: text/event-stream" in head
    assert "Content-Length: 8" in head  # {"x": 1}


def test_content_length_body_and_accept_header(scripted):
    heads = []

    def handler(conn, srv):
        heads.append(read_head(conn))
        conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\nnope")
        read_request(conn)

    srv = scripted(handler)
    client = StreamClient("127.0.0.1", srv.port)

    async def go():
        try:
            return await client.post("/missing", b"{}", accept="application/json")
        finally:
            client.close()

    raw = asyncio.run(go())
    assert raw.status == 404 and b"".join(raw.chunks) == b"nope"
    assert "Accept: application/json" in heads[0]


def test_the_watchdog_rearms_while_bytes_arrive_and_catches_a_later_stall(scripted):
    """The one timer per request: re-armed each time it fires while data keeps coming (a stream longer
    than the stall limit is fine), and the re-armed timer still ends a stream that then goes silent."""

    def handler(conn, srv):
        first = srv.connections == 1
        read_request(conn)
        conn.sendall(STREAM_HEAD)
        for i in range(6):  # 0.6 s of data, a chunk every 0.1 s: longer than the 0.25 s stall limit
            conn.sendall(chunk(sse({"i": i})))
            time.sleep(0.1)
        if first:
            conn.sendall(chunk(b""))
            read_request(conn)  # keep the connection until the client closes it
        else:
            time.sleep(3.0)  # then silence

    srv = scripted(handler)

    async def post_on_a_new_connection():
        client = StreamClient("127.0.0.1", srv.port)
        try:
            return await client.post("/v1/chat/completions", {"x": 1}, stall_timeout=0.25)
        finally:
            client.close()

    async def go():
        raw = await post_on_a_new_connection()
        t0 = time.perf_counter()
        with pytest.raises(StreamError, match=r"stream stalled: no data for 0.25 s"):
            await post_on_a_new_connection()
        return raw, time.perf_counter() - t0

    raw, failed_after = asyncio.run(go())
    assert raw.status == 200 and len(raw.chunks) == 6
    assert 0.6 < failed_after < 2.5  # the data, then the stall limit: not the 3 s of silence to the end
