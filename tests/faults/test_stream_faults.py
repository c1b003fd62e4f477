"""A malformed stream: the seeds' partial llama.cpp run died on a non-JSON chunk. llama-server does not
send one on demand, so this uses a protocol double: a raw HTTP server on 127.0.0.1 that answers every
request with an SSE stream whose second event is not JSON."""

from __future__ import annotations

import socket
import threading
from types import SimpleNamespace

from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.workload.requests import run_requests

BAD_STREAM = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
    b"data: <html>502 Bad Gateway</html>\n\n"
    b"data: [DONE]\n\n"
)


def _serve_bad_streams(sock: socket.socket, stop: threading.Event) -> None:
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        with conn:
            conn.recv(65536)
            conn.sendall(BAD_STREAM)


def test_non_json_chunk_fails_that_request_with_the_chunk_and_the_run_goes_on():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    stop = threading.Event()
    t = threading.Thread(target=_serve_bad_streams, args=(sock, stop), daemon=True)
    t.start()
    server = SimpleNamespace(
        port=sock.getsockname()[1],
        engine=LlamaCppEngine(),
        alive=lambda: True,
        config=SimpleNamespace(name="double", request={}, args=()),
    )
    try:
        records = run_requests(
            server,
            [{"messages": [{"role": "user", "content": "x"}], "max_tokens": 4}] * 3,
            concurrency=2,
            stall_timeout_s=5,
        )
    finally:
        stop.set()
        t.join()
        sock.close()
    assert len(records) == 3
    assert all(not r.ok and "non-JSON chunk" in r.error and "502 Bad Gateway" in r.error for r in records)
