"""A scriptable raw-socket HTTP server for the client's failure modes (not an engine double: it only
reproduces transport-level behaviour — bad chunks, stalls, closed connections — that real servers show)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from types import SimpleNamespace

import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine


def sse(obj) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


def delta(text: str, **extra) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}], **extra}


STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def read_request(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return None
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(body) < length:
        body += conn.recv(65536)
    return body


class ScriptedServer:
    """Each accepted connection is handed to ``handler(conn, server)``; requests are counted."""

    def __init__(self, handler):
        self.handler = handler
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.requests = 0
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        try:
            self.handler(conn, self)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self._stop = True
        self.sock.close()


@pytest.fixture
def scripted():
    """``scripted(handler)`` starts a :class:`ScriptedServer`; all are closed after the test."""
    servers = []

    def make(handler):
        s = ScriptedServer(handler)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def fake_server(port: int):
    """Just what run_requests needs from an LLMServer: a port, an engine adapter, config fields."""
    return SimpleNamespace(
        port=port, engine=LlamaCppEngine(), config=SimpleNamespace(name="t", request={}), alive=lambda: True
    )


@pytest.fixture
def ctrl_c_works():
    """SIGINT raises KeyboardInterrupt during the test, as at a terminal, also when the suite was started
    with SIGINT ignored (a background job of a non-interactive shell inherits that); restored after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def ctrl_c() -> None:
    """Ctrl-C: SIGINT to this process (use with ``ctrl_c_works``)."""
    os.kill(os.getpid(), signal.SIGINT)
