"""Request kinds: routes come from the engine, and a JSON request never raises for a bad answer
(a scripted raw-socket server, not an engine double)."""

import asyncio
import json

import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.transport.http import StreamClient
from pytest_llmbench.transport.kinds import KINDS, RequestKind, call_json, get_kind, register, send_json
from pytest_llmbench.workload.requests import run_requests
from tests.scripted_http import fake_server, read_request


def json_answer(status: int, body: bytes, version: str = "HTTP/1.1") -> bytes:
    return (
        f"{version} {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body
    )


def answering(*answers):
    """A handler that answers each request on a connection with the next of ``answers``."""

    def handler(conn, srv):
        while (body := read_request(conn)) is not None:
            srv.requests += 1
            srv.bodies = [*getattr(srv, "bodies", []), json.loads(body)]
            conn.sendall(answers[min(srv.requests, len(answers)) - 1])

    return handler


def test_streamed_kinds_take_the_engine_route_and_json_needs_one():
    engine = LlamaCppEngine()
    assert get_kind("chat").path(engine) == engine.chat_path == "/v1/chat/completions"
    assert get_kind("completions").path(engine) == "/v1/completions"
    assert get_kind("chat").path(engine, "/custom") == "/custom"
    with pytest.raises(ValueError, match="no engine route"):
        get_kind("json").path(engine)
    with pytest.raises(ValueError, match=r"unknown request kind 'embeddings' .*chat, completions, json"):
        get_kind("embeddings")


def test_a_registered_kind_is_found_by_name():
    kind = RequestKind("test-kind", send_json, stream=False)
    try:
        assert register(kind) is kind and get_kind("test-kind") is kind
    finally:
        KINDS.pop("test-kind")


def test_send_json_reads_the_answer_and_reports_each_failure_as_a_reason(scripted):
    srv = scripted(answering(json_answer(200, b'{"ok": 1}'), json_answer(500, b"boom"), json_answer(200, b"not json{")))
    client = StreamClient("127.0.0.1", srv.port)

    async def three():
        try:
            return [await send_json(client, "/v1/x", {"q": i}) for i in range(3)]
        finally:
            client.close()

    good, http_error, broken = asyncio.run(three())
    assert good.ok and good.data == {"ok": 1} and good.latency_s > 0
    assert http_error.error == "HTTP 500: boom" and http_error.data is None
    assert broken.error.startswith("response is not JSON: 'not json{'")
    assert srv.bodies == [{"q": 0}, {"q": 1}, {"q": 2}] and srv.connections == 1  # one keep-alive connection


def test_http_1_0_answers_close_the_connection_and_the_next_request_opens_a_new_one(scripted):
    def handler(conn, srv):
        read_request(conn)
        srv.requests += 1
        conn.sendall(json_answer(200, b'{"n": %d}' % srv.requests, version="HTTP/1.0"))  # then closes

    srv = scripted(handler)
    client = StreamClient("127.0.0.1", srv.port)

    async def three():
        try:
            return [await send_json(client, "/r", {}) for _ in range(3)]
        finally:
            client.close()

    assert [r.data for r in asyncio.run(three())] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert srv.connections == 3


def test_an_unreachable_server_is_a_transport_reason_not_an_exception():
    reply = call_json("http://127.0.0.1:9", "/v1/x", {}, timeout_s=2.0)
    assert not reply.ok and reply.error.startswith("transport: cannot connect to 127.0.0.1:9")


def test_call_json_sends_one_blocking_request(scripted):
    srv = scripted(answering(json_answer(200, b'{"answer": "A"}')))
    assert call_json(f"http://127.0.0.1:{srv.port}", "/v1/chat/completions", {"max_tokens": 1}).data == {"answer": "A"}
    assert srv.bodies == [{"max_tokens": 1}]


def test_call_json_refuses_a_url_it_cannot_reach_plainly():
    with pytest.raises(ValueError, match="only plain http"):
        call_json("https://example.invalid", "/x", {})


def test_run_requests_refuses_a_kind_that_does_not_stream():
    with pytest.raises(ValueError, match="kind 'json' does not"):
        run_requests(fake_server(9), [{}], kind="json")
