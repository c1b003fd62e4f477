"""A scenario end to end against a scripted HTTP server (not an engine double: it answers any chat request
with a fixed stream) behind a stand-in for LLMServer's control plane: warmup, flush, the run, metrics."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import ClassVar

import pytest

from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.engines.base import SpecStats
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.workload.scenario import Scenario, WorkloadError, run_scenario
from tests.scripted_http import STREAM_HEAD, chunk, ctrl_c, delta, read_request, sse


def streaming(srv, conn, fail=False):
    """Answer every request on the connection: three content chunks and usage without prompt tokens."""
    while (body := read_request(conn)) is not None:
        srv.bodies.append(json.loads(body))
        if fail:
            conn.sendall(b"HTTP/1.1 503 Unavailable\r\ncontent-length: 7\r\n\r\nloading")
            continue
        stream_reply(conn)


def stream_reply(conn):
    conn.sendall(STREAM_HEAD)
    for t in ("a", "b", "c"):
        conn.sendall(chunk(sse(delta(t))))
    conn.sendall(
        chunk(
            sse(
                {
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                    "usage": {"completion_tokens": 3},
                }
            )
            + b"data: [DONE]\n\n"
        )
        + chunk(b"")
    )


class UnscrapedLlamaCpp(LlamaCppEngine):
    """llama.cpp's parsing, no /metrics names: a scripted server answers every request as a completion,
    so a scrape would eat the request counts these tests script (tests/telemetry covers the scrape)."""

    metric_names: ClassVar[dict] = {}


class FakeServer:
    """What run_scenario uses of an LLMServer, with calls counted."""

    def __init__(self, port, *, flush_note=None, exits=False):
        self.port, self.engine = port, UnscrapedLlamaCpp()
        self.config = SimpleNamespace(name="fake", request={}, source="fake.yaml", api_key=None)
        self.name, self.base_url, self.log_path = "fake", f"http://127.0.0.1:{port}", "fake/server.log"
        self.calls: list[str] = []
        self.flush_note, self.exits = flush_note, exits
        self.handle = SimpleNamespace(exit_code=lambda: -9)

    def alive(self):
        return True

    def settled_alive(self):
        return not self.exits

    def flush_cache(self):
        self.calls.append("flush")
        return self.flush_note

    def spec_counters(self):
        self.calls.append("counters")
        return {"n": len(self.calls)}

    def spec_between(self, before, after):
        return SpecStats(2.0, source="window") if before != after else None

    def server_info(self):
        return {"build": "x"}

    def log_tail(self, lines):
        return "model not loaded yet"


@pytest.fixture
def served(scripted):
    def make(**kw):
        fail = kw.pop("fail", False)
        srv = scripted(lambda conn, s: streaming(s, conn, fail))
        srv.bodies = []
        return srv, FakeServer(srv.port, **kw)

    return make


def test_scenario_fields_are_checked_naming_the_scenario():
    with pytest.raises(ValueError, match=r"scenario 'x': dataset must be one of .*got 'squad'"):
        Scenario("x", dataset="squad")
    with pytest.raises(ValueError, match="scenario 'r': dataset 'random' needs input_len"):
        Scenario("r", dataset="random")
    with pytest.raises(ValueError, match="scenario 'c': concurrency must be ≥ 1"):
        Scenario("c", concurrency=0)


def test_request_body_carries_sampling_and_extra_fields():
    sc = Scenario("s", output_len=64, temperature=0.0, extra_body={"reasoning_effort": "medium", "max_tokens": 9})
    assert sc.body(Prompt("hi")) == {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 9,
        "temperature": 0.0,
        "ignore_eos": True,
        "reasoning_effort": "medium",
    }
    plain = Scenario("p", temperature=None, ignore_eos=False).body(Prompt("hi"), max_tokens=5)
    assert plain == {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    assert Scenario("d", extra_body={"a": 1}).as_dict()["extra_body"] == {"a": 1}


def test_warmup_flush_run_and_metrics_in_order(served):
    srv, server = served(flush_note="slots endpoint unavailable")
    sc = Scenario("chat", dataset="prompts", output_len=64, num_prompts=3, concurrency=2, warmup=2)
    result = run_scenario(server, sc, prompts=["p0", Prompt("p1", input_tokens=11), "p2", "not sent"])
    assert len(srv.bodies) == 2 + 3
    warm, run = srv.bodies[:2], srv.bodies[2:]
    assert all(b["max_tokens"] == 32 and b["messages"][0]["content"] == "p0" for b in warm)  # capped warmups
    assert sorted(b["messages"][0]["content"] for b in run) == ["p0", "p1", "p2"]  # num_prompts caps the list
    assert all(b["stream"] and b["stream_options"] == {"include_usage": True} and b["model"] == "fake" for b in run)
    assert server.calls == ["flush", "counters", "counters"]  # flushed after the warmups, counters around the run
    assert result.notes == ["slots endpoint unavailable"] and result.server_info == {"build": "x"}
    assert [r.prompt_tokens for r in result.records] == [
        None,
        11,
        None,
    ]  # the prompt's own count when the server says none
    m = result.metrics
    assert m["completed"] == 3 and m["failed"] == 0 and m["total_output_tokens"] == 9 and m["total_input_tokens"] == 11
    assert result.spec_server.accept_length == 2.0 and m["server_accept_length"] == 2.0
    assert result.errors == []


def test_all_warmups_failing_is_one_error_with_the_log_tail(served):
    srv, server = served(fail=True)
    with pytest.raises(
        WorkloadError,
        match=r"(?s)config fake: all 2 warm-up requests of scenario 'w' to http://127.0.0.1:\d+/v1/chat/completions "
        r"failed: HTTP 503: loading.*model not loaded yet",
    ):
        run_scenario(server, Scenario("w", dataset="prompts", warmup=2), prompts=["x"])
    assert len(srv.bodies) == 2 and server.calls == []  # nothing after the warmups


def test_failed_requests_on_a_server_that_died_are_noted_and_skip_the_control_plane(served):
    _srv, server = served(fail=True, exits=True)
    result = run_scenario(server, Scenario("d", dataset="prompts", warmup=0, num_prompts=2), prompts=["a", "b"])
    assert result.metrics["failed"] == 2 and result.errors[0] == "request 0: HTTP 503: loading"
    assert result.notes == [
        "server exited during the scenario (code -9, SIGKILL: killed from outside, often by "
        "the kernel's out-of-memory killer (see dmesg))"
    ]
    assert result.server_info == {} and result.spec_server is None and server.calls == ["flush", "counters"]


def test_the_prompts_dataset_needs_prompts():
    with pytest.raises(WorkloadError, match="dataset 'prompts' needs prompts="):
        run_scenario(FakeServer(9), Scenario("p", dataset="prompts"))


def ctrl_c_at_request(n):
    """The scripted stream, with a SIGINT to this process once the server has read request ``n``
    (counted from 0 across connections, warmups included)."""
    lock = threading.Lock()
    seen = [0]

    def handler(conn, srv):
        while read_request(conn) is not None:
            with lock:
                k, seen[0] = seen[0], seen[0] + 1
            if k == n:
                ctrl_c()
            stream_reply(conn)

    handler.seen = seen
    return handler


def test_ctrl_c_mid_run_raises_keyboard_interrupt_carrying_the_finished_requests(scripted, ctrl_c_works):
    srv = scripted(ctrl_c_at_request(1 + 4))  # one warmup, then the 5th request of the run
    server = FakeServer(srv.port)
    sc = Scenario("c", dataset="prompts", num_prompts=8, concurrency=2, warmup=1)
    with pytest.raises(KeyboardInterrupt) as exc:
        run_scenario(server, sc, prompts=[f"p{i}" for i in range(8)])
    partial = exc.value.llmbench_partial
    assert 3 <= partial.metrics["completed"] < 8 and partial.metrics["failed"] == 0
    assert partial.notes == [f"interrupted (KeyboardInterrupt) after {partial.metrics['completed']} of 8 requests"]
    assert server.calls == ["flush", "counters"]  # no control-plane call after the interrupt


def test_ctrl_c_in_the_warmup_raises_keyboard_interrupt(scripted, ctrl_c_works):
    handler = ctrl_c_at_request(1)
    server = FakeServer(scripted(handler).port)
    with pytest.raises(KeyboardInterrupt) as exc:
        run_scenario(server, Scenario("w", dataset="prompts", num_prompts=4, warmup=3), prompts=["p"] * 4)
    assert handler.seen == [2], "the third warmup is never sent"
    assert not hasattr(exc.value, "llmbench_partial") and server.calls == []  # nothing measured, no flush
