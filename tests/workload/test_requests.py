"""run_requests under transport failures: every one becomes a failed request with a reason, never an
exception (a scripted raw-socket server, not an engine double)."""

import re
import threading
import time

import pytest

from pytest_llmbench.transport.http import StreamClient, _StreamProtocol
from pytest_llmbench.workload.requests import run_requests
from tests.scripted_http import STREAM_HEAD, chunk, ctrl_c, delta, fake_server, read_request, sse


def good_stream(conn, srv, n=5):
    while read_request(conn) is not None:
        srv.requests += 1
        conn.sendall(STREAM_HEAD)
        for i in range(n):
            conn.sendall(chunk(sse(delta(f"t{i}"))))
        final = {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": n},
        }
        conn.sendall(chunk(sse(final) + b"data: [DONE]\n\n") + chunk(b""))


def test_good_stream_is_recorded(scripted):
    srv = scripted(good_stream)
    [rec] = run_requests(fake_server(srv.port), [{"messages": [], "max_tokens": 5}])
    assert rec.ok, rec.error
    assert rec.completion_tokens == 5 and rec.prompt_tokens == 7
    assert rec.text == "t0t1t2t3t4"
    assert len(rec.chunk_times) == 5 and rec.chunk_times == sorted(rec.chunk_times)
    assert 0 < rec.ttft_s <= rec.e2e_s
    assert rec.finish_reason == "length"


def test_non_json_chunk_fails_the_request_with_its_bytes(scripted):
    def handler(conn, srv):
        read_request(conn)
        conn.sendall(STREAM_HEAD + chunk(sse(delta("ok"))) + chunk(b"data: {not json\n\n") + chunk(b""))

    srv = scripted(handler)
    [rec] = run_requests(fake_server(srv.port), [{"messages": []}])
    assert not rec.ok
    assert rec.error.startswith("non-JSON chunk: b'{not json'")
    assert rec.completion_tokens == 0


def test_stalled_stream_fails_after_the_stall_timeout(scripted):
    def handler(conn, srv):
        read_request(conn)
        conn.sendall(STREAM_HEAD + chunk(sse(delta("first"))))
        time.sleep(3)

    srv = scripted(handler)
    t0 = time.perf_counter()
    [rec] = run_requests(fake_server(srv.port), [{"messages": []}], stall_timeout_s=0.5)
    assert not rec.ok and re.fullmatch(
        r"server not responding: no data on any connection for 0\.[5-9] s "
        r"\(stall_timeout_s=0\.5\)",
        rec.error,
    ), rec.error
    assert time.perf_counter() - t0 < 2.5


def test_one_stalled_stream_among_live_ones_fails_alone(scripted):
    """The scenario-level watch ends a run only when every connection is silent: a single stuck stream
    next to live ones fails by its own stall limit, and the others complete."""

    def handler(conn, srv):
        body = read_request(conn)
        conn.sendall(STREAM_HEAD + chunk(sse(delta("first"))))
        if b'"stuck"' in body:
            time.sleep(3)
            return
        for _ in range(30):  # keeps bytes flowing for 1.5 s, past the stuck one's limit
            time.sleep(0.05)
            conn.sendall(chunk(sse(delta("x"))))
        conn.sendall(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    srv = scripted(handler)
    stuck, live = {"messages": [{"role": "user", "content": "stuck"}]}, {"messages": []}
    recs = run_requests(fake_server(srv.port), [stuck, live], concurrency=2, stall_timeout_s=0.5)
    assert not recs[0].ok and recs[0].error.startswith("stream stalled"), recs[0].error
    assert recs[1].ok, recs[1].error


def test_http_error_status_is_a_failed_request_with_the_body(scripted):
    def handler(conn, srv):
        read_request(conn)
        body = b'{"error":"context too long"}'
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n" % len(body) + body)

    srv = scripted(handler)
    [rec] = run_requests(fake_server(srv.port), [{"messages": []}])
    assert not rec.ok and rec.error == 'HTTP 400: {"error":"context too long"}'


def test_server_closing_mid_response_is_a_failure(scripted):
    def handler(conn, srv):
        read_request(conn)
        conn.sendall(STREAM_HEAD + chunk(sse(delta("partial"))))

    srv = scripted(handler)
    [rec] = run_requests(fake_server(srv.port), [{"messages": []}])
    assert not rec.ok and "closed the connection mid-response" in rec.error


def test_idle_keepalive_closed_by_server_is_reconnected_not_failed(scripted):
    """llama-server drops idle pooled connections: the next request must reconnect, not fail."""

    def one_request_then_close(conn, srv):
        read_request(conn)
        srv.requests += 1
        conn.sendall(STREAM_HEAD + chunk(sse(delta("x", usage={"completion_tokens": 1}))) + chunk(b""))
        time.sleep(0.2)  # then close the idle keep-alive connection without a word

    srv = scripted(one_request_then_close)
    recs = run_requests(fake_server(srv.port), [{"messages": []}] * 3, concurrency=1)
    assert [r.ok for r in recs] == [True, True, True], [r.error for r in recs]
    assert srv.requests == 3 and srv.connections >= 2


def test_multi_token_chunks_spread_itl_over_their_tokens(scripted):
    """Speculative decoding sends several tokens per chunk; cumulative usage tells how many."""

    def handler(conn, srv):
        read_request(conn)
        conn.sendall(STREAM_HEAD)
        for cum in (1, 4, 6):
            conn.sendall(chunk(sse(delta("ab", usage={"completion_tokens": cum}))))
            time.sleep(0.05)
        conn.sendall(chunk(b""))

    srv = scripted(handler)
    [rec] = run_requests(fake_server(srv.port), [{"messages": []}])
    assert rec.ok and rec.chunk_tokens == [1, 3, 2] and rec.completion_tokens == 6
    itls = rec.itls_s()
    assert len(itls) == 5  # one per token after the first
    assert abs(itls[0] * 3 - (rec.chunk_times[1] - rec.chunk_times[0])) < 1e-9


def test_late_final_crlf_then_close_is_reconnected_not_failed(scripted):
    """Seen with llama-server on CUDA: the chunked terminator's last CRLF arrives after we finished the
    response and the server then closes the connection; the next request must be retried, not failed."""

    def handler(conn, srv):
        read_request(conn)
        srv.requests += 1
        conn.sendall(STREAM_HEAD + chunk(sse(delta("x", usage={"completion_tokens": 1}))) + b"0\r\n")
        time.sleep(0.05)
        conn.sendall(b"\r\n")
        read_request(conn)  # the client's next request arrives on the pooled connection …
        # … and is never answered: the server closes instead.

    srv = scripted(handler)
    recs = run_requests(fake_server(srv.port), [{"messages": []}] * 3, concurrency=1)
    assert [r.error for r in recs] == [None, None, None]
    assert srv.requests == 3


# ---- Ctrl-C ---------------------------------------------------------------------------------------
# asyncio.run's first SIGINT only cancels the main task; KeyboardInterrupt reaches the caller only if
# that cancel is never caught on the way. Each point below sends the SIGINT where a request is in one
# particular state, from the server's thread (the client is waiting on the socket) or from the client's
# own code, so no point depends on timing.

CTRL_C_AT = 3  # the 4th request the server reads (two connections: at least two have finished by then)


def streaming_with_ctrl_c(at: str):
    """Answers every request with a 3-token stream; sends SIGINT at ``at`` of request CTRL_C_AT."""
    lock = threading.Lock()

    def handler(conn, srv):
        while read_request(conn) is not None:
            with lock:
                n, srv.requests = srv.requests, srv.requests + 1
            here = n == CTRL_C_AT
            if here and at == "request read":  # the client waits for the status line
                ctrl_c()
            conn.sendall(STREAM_HEAD)
            if here and at == "head sent":  # status line and headers in, no token yet
                time.sleep(0.05)
                ctrl_c()
            for i in range(3):
                conn.sendall(chunk(sse(delta(f"t{i}"))))
                if here and at == "mid-stream" and i == 0:
                    time.sleep(0.05)
                    ctrl_c()
            final = {
                "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                "usage": {"completion_tokens": 3},
            }
            conn.sendall(chunk(sse(final) + b"data: [DONE]\n\n") + chunk(b""))
            if here and at == "response sent":  # the client finishes this one and starts the next
                ctrl_c()

    return handler


def run_until_ctrl_c(server) -> list:
    """Eight requests at concurrency 2; the records reported before the interrupt."""
    done: list = []
    with pytest.raises(KeyboardInterrupt):
        run_requests(server, [{"messages": []}] * 8, concurrency=2, on_done=done.append)
    return done


@pytest.mark.parametrize("at", ["request read", "head sent", "mid-stream", "response sent"])
def test_ctrl_c_on_the_server_side_of_a_request_raises_keyboard_interrupt(scripted, ctrl_c_works, at):
    srv = scripted(streaming_with_ctrl_c(at))
    done = run_until_ctrl_c(fake_server(srv.port))
    assert 2 <= len(done) < 8, "the requests that finished are reported, the rest are not sent"
    assert all(r.ok for r in done), [r.error for r in done]  # an interrupted request is not a failure
    assert srv.requests < 8


def test_ctrl_c_between_requests_raises_keyboard_interrupt(scripted, ctrl_c_works):
    srv = scripted(streaming_with_ctrl_c("never"))
    done: list = []

    def on_done(rec):
        done.append(rec)
        if len(done) == 3:
            ctrl_c()  # in the client's own code, while a worker task runs

    with pytest.raises(KeyboardInterrupt):
        run_requests(fake_server(srv.port), [{"messages": []}] * 8, concurrency=2, on_done=on_done)
    assert 3 <= len(done) < 8 and all(r.ok for r in done)


@pytest.mark.parametrize("where", ["connect", "response complete", "response failed"])
def test_ctrl_c_inside_the_transport_raises_keyboard_interrupt(scripted, ctrl_c_works, monkeypatch, where):
    """The transport's own moments: a connection being opened; a response finished (or failed) whose
    task has not resumed yet, so the cancel meets a future that is already done."""
    calls = {"n": 0}

    def nth() -> bool:
        calls["n"] += 1
        return calls["n"] == CTRL_C_AT + 1

    if where == "connect":
        connect = StreamClient._connect

        async def connect_with_ctrl_c(self):
            if nth():
                ctrl_c()
            return await connect(self)

        monkeypatch.setattr(StreamClient, "_connect", connect_with_ctrl_c)
        handler = one_request_per_connection
    else:
        settle = _StreamProtocol._finish if where == "response complete" else _StreamProtocol._fail
        name = settle.__name__

        def settle_with_ctrl_c(self, *a):
            settle(self, *a)
            if nth():
                ctrl_c()

        monkeypatch.setattr(_StreamProtocol, name, settle_with_ctrl_c)
        handler = streaming_with_ctrl_c("never") if where == "response complete" else bad_chunk_stream
    srv = scripted(handler)
    done = run_until_ctrl_c(fake_server(srv.port))
    assert CTRL_C_AT - 1 <= len(done) < 8


def one_request_per_connection(conn, srv):
    """One good stream, then the connection is closed: every request opens a new one."""
    if read_request(conn) is not None:
        head = STREAM_HEAD.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n")
        conn.sendall(head + chunk(sse(delta("x", usage={"completion_tokens": 1}))) + chunk(b""))


def bad_chunk_stream(conn, srv):
    while read_request(conn) is not None:
        conn.sendall(STREAM_HEAD + chunk(sse(delta("ok"))) + b"zz\r\n")
