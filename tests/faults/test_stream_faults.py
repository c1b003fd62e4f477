"""A malformed stream fails the request it is in, never the scenario: a chunk that is not JSON (the seeds'
partial llama.cpp run died on one), and a chunk that is valid JSON of the wrong shape (issue 52: a string
``delta``, an integer ``content``, a string ``completion_tokens`` aborted the whole scenario).

llama-server does not send either on demand, so this uses protocol doubles on 127.0.0.1: a raw HTTP server
for the request layer, and a conftest engine that serves odd streams to a pytest session run as a user
runs it (results.jsonl, terminal)."""

from __future__ import annotations

import json
import socket
import textwrap
import threading
from types import SimpleNamespace

import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.workload.requests import run_requests

from .conftest import records

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
GOOD = b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'


def _stream(*events: bytes) -> bytes:
    return HEAD + b"".join(b"data: " + e + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _serve(sock: socket.socket, stop: threading.Event, body: bytes) -> None:
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        with conn:
            conn.recv(65536)
            conn.sendall(body)


def _run_against(body: bytes, n: int = 3):
    """Records of ``n`` requests to a server that answers each with ``body``."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    stop = threading.Event()
    t = threading.Thread(target=_serve, args=(sock, stop, body), daemon=True)
    t.start()
    server = SimpleNamespace(
        port=sock.getsockname()[1],
        engine=LlamaCppEngine(),
        alive=lambda: True,
        config=SimpleNamespace(name="double", request={}, args=()),
    )
    try:
        return run_requests(
            server,
            [{"messages": [{"role": "user", "content": "x"}], "max_tokens": 4}] * n,
            concurrency=2,
            stall_timeout_s=5,
        )
    finally:
        stop.set()
        t.join()
        sock.close()


def test_non_json_chunk_fails_that_request_with_the_chunk_and_the_run_goes_on():
    records = _run_against(HEAD + GOOD + b"data: <html>502 Bad Gateway</html>\n\n" + b"data: [DONE]\n\n")
    assert len(records) == 3
    assert all(not r.ok and "non-JSON chunk" in r.error and "502 Bad Gateway" in r.error for r in records)


#: (second chunk of the stream, what the request's error says about it)
ODD_CHUNKS = {
    "delta is a string": (b'{"choices":[{"delta":"oops"}]}', "choices[0].delta is str, not an object"),
    "content is an integer": (b'{"choices":[{"delta":{"content":5}}]}', "choices[0].delta.content is int"),
    "completion_tokens is a word": (
        b'{"choices":[{"delta":{"content":"x"}}],"usage":{"completion_tokens":"many"}}',
        "usage.completion_tokens is 'many', not a count",
    ),
    "usage-only chunk with a word count": (
        b'{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":"many"}}',
        "usage.completion_tokens is 'many', not a count",
    ),
    "choices is an object": (b'{"choices":{"0":{"delta":{"content":"x"}}}}', "choices is dict, not a list"),
    "a choice is a number": (b'{"choices":[7]}', "choices[0] is int, not an object"),
    "usage is a list": (b'{"usage":[1,2]}', "usage is list, not an object"),
    "timings is a string": (b'{"timings":"fast"}', "timings is str, not an object"),
    "meta_info is a string": (b'{"meta_info":"x"}', "meta_info is str, not an object"),
    "text is a number": (b'{"choices":[{"text":5}]}', "choices[0].text is int, not a string"),
    "tool_calls is a string": (
        b'{"choices":[{"delta":{"tool_calls":"call"}}]}',
        "choices[0].delta.tool_calls is not a list of tool-call objects",
    ),
    "tool-call index far out of range": (
        b'{"choices":[{"delta":{"tool_calls":[{"index":100000,"function":{"name":"f"}}]}}]}',
        "choices[0].delta.tool_calls is not a list of tool-call objects",
    ),
}


@pytest.mark.parametrize("chunk, says", ODD_CHUNKS.values(), ids=ODD_CHUNKS.keys())
def test_a_chunk_of_the_wrong_shape_fails_that_request_naming_the_chunk(chunk, says):
    records = _run_against(_stream(b'{"choices":[{"delta":{"content":"hi"}}]}', chunk))
    assert len(records) == 3
    for r in records:
        assert not r.ok and r.completion_tokens == 0
        assert r.error.startswith(f"malformed chunk 2 of 2: {says}"), r.error
        assert json.dumps(json.loads(chunk))[:40] in r.error  # the chunk itself, to find it in a capture


# A conftest engine whose "server" is a Python double: a request whose prompt says ODD:<shape> gets a
# stream with that odd chunk in the middle; every other request gets a well-formed stream.
DOUBLE = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ODD = {
    "delta": {"choices": [{"delta": "oops"}]},
    "content": {"choices": [{"delta": {"content": 5}}]},
    "count": {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": "many"}},
}

def event(obj):
    return b"data: " + json.dumps(obj).encode() + b"\n\n"

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a):
        pass
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
        self.wfile.write(b'{"status":"ok"}')
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.end_headers()
        out = [event({"choices": [{"delta": {"content": "tok"}}]}) for _ in range(3)]
        if prompt.startswith("ODD:"):
            out.insert(1, event(ODD[prompt[4:]]))
        else:
            out.append(event({"choices": [{"delta": {}, "finish_reason": "length"}],
                              "usage": {"prompt_tokens": 3, "completion_tokens": 3}}))
        self.wfile.write(b"".join(out) + b"data: [DONE]\n\n")

ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
"""

CONFTEST = textwrap.dedent('''
    import sys
    from pathlib import Path
    from pytest_llmbench.engines.base import Engine

    class OddStream(Engine):
        """A server double that sends oddly shaped stream chunks when asked to."""
        name = "odd-stream"

        def command(self, cfg, host, port):
            return [sys.executable, str(Path(__file__).with_name("double.py")), host, str(port)]

    def pytest_llmbench_engines():
        return [OddStream]
''')


def test_odd_chunks_fail_their_requests_and_the_scenario_is_kept(pytester, tmp_path):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "double.py").write_text(DOUBLE)
    pytester.makefile(
        ".yaml",
        **{"configs/servers": "configs:\n  - {name: odd, engine: odd-stream, model: m.gguf, startup_timeout: 30}\n"},
    )
    (pytester.path / "configs" / "m.gguf").write_bytes(b"")
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(
        test_odd="""
        from pytest_llmbench import Scenario

        def test_odd(llm_server, bench):
            prompts = ["fine", "ODD:delta", "fine", "ODD:content", "ODD:count"]
            bench.run(Scenario("s", dataset="prompts", num_prompts=5, concurrency=2, warmup=1), prompts=prompts)
    """
    )
    results = tmp_path / "results"
    result = pytester.runpytest_subprocess(f"--results-dir={results}", "-p", "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "AttributeError" not in out, out
    result.assert_outcomes(passed=1)
    (line,) = records(results, "scenario")
    errors = {r["index"]: r["error"] for r in line["requests"] if not r["ok"]}
    assert sorted(errors) == [1, 3, 4], line["requests"]
    assert "choices[0].delta is str" in errors[1]
    assert "choices[0].delta.content is int" in errors[3]
    assert "usage.completion_tokens is 'many'" in errors[4]
    assert line["metrics"]["completed"] == 2 and line["metrics"]["failed"] == 3
