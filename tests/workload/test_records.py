"""One finished response → one request record: every protocol problem becomes the record's error."""

from __future__ import annotations

import json

import pytest

from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.transport.http import RawResponse
from pytest_llmbench.workload.records import RequestRecord, record_from_response


def raw(events, *, status=200, t0=10.0, step=0.1):
    """A response whose i-th SSE event arrived at t0 + (i + 1) * step."""
    chunks = [b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events]
    times = [t0 + (i + 1) * step for i in range(len(chunks))]
    return RawResponse(status, {}, times, chunks, t0, times[-1] if times else t0)


def chat(text=None, **delta):
    d = {"content": text} if text is not None else {}
    return {"choices": [{"index": 0, "delta": {**d, **delta}, "finish_reason": None}]}


def test_content_and_reasoning_chunks_with_usage():
    r = record_from_response(
        3,
        raw(
            [
                chat(reasoning_content="hm"),
                chat("A"),
                chat("B"),
                {
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 3},
                },
                b"[DONE]",
            ]
        ),
        LlamaCppEngine(),
    )
    assert r.ok and r.index == 3 and r.error is None
    assert (r.text, r.reasoning, r.finish_reason) == ("AB", "hm", "stop")
    assert r.ttft_s == pytest.approx(0.1)  # reasoning counts as the first token
    assert r.chunk_times == pytest.approx([0.1, 0.2, 0.3]) and r.e2e_s == pytest.approx(0.5)  # [DONE] last
    assert (r.prompt_tokens, r.completion_tokens) == (5, 3)


def test_cumulative_counters_spread_tokens_over_chunks():
    events = [chat("a"), {**chat("bcd"), "timings": {"predicted_n": 4}}, {**chat("e"), "timings": {"predicted_n": 5}}]
    events[0]["timings"] = {"predicted_n": 1}
    r = record_from_response(0, raw(events), LlamaCppEngine())
    assert r.chunk_tokens == [1, 3, 1] and r.completion_tokens == 5
    assert len(r.itls_s()) == 4  # one per token after the first


def test_completions_text_and_sglang_meta_info_give_spec_stats():
    events = [
        {"choices": [{"index": 0, "text": "x"}]},
        {
            "choices": [
                {
                    "index": 0,
                    "text": "y",
                    "finish_reason": "length",
                    "meta_info": {"completion_tokens": 8, "prompt_tokens": 4, "spec_verify_ct": 2},
                }
            ]
        },
    ]
    r = record_from_response(0, raw(events), SGLangEngine())
    assert r.ok and r.text == "xy" and r.finish_reason == "length"
    assert (r.completion_tokens, r.prompt_tokens) == (8, 4)
    assert r.spec.accept_length == 4.0 and r.spec.source == "meta_info"


def test_streamed_tool_call_deltas_are_merged_by_index():
    calls = [
        [{"index": 0, "id": "c1", "function": {"name": "get_", "arguments": '{"a"'}}],
        [{"index": 0, "function": {"name": "weather", "arguments": ": 1}"}}],
        [{"index": 1, "function": {"name": "f", "arguments": "{}"}}],
    ]
    r = record_from_response(0, raw([chat(tool_calls=c) for c in calls]), LlamaCppEngine())
    assert r.ok and r.tool_calls == [
        {"name": "get_weather", "arguments": '{"a": 1}', "id": "c1"},
        {"name": "f", "arguments": "{}"},
    ]


@pytest.mark.parametrize(
    "response, error",
    [
        (raw([b'{"detail": "bad model"}'], status=404), 'HTTP 404: data: {"detail": "bad model"}'),
        (raw([chat("a"), {"error": {"message": "out of memory"}}]), "server error in stream: out of memory"),
        (raw([chat("a"), {"error": "boom"}]), "server error in stream: boom"),
        (raw([{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]), "stream ended without any output"),
        (raw([chat("a"), b"{not json"]), "non-JSON chunk: b'{not json'"),
    ],
)
def test_protocol_problems_become_the_records_error(response, error):
    r = record_from_response(7, response, LlamaCppEngine())
    assert not r.ok and r.error == error and r.index == 7
    assert r.tpot_s is None


def test_tpot_needs_two_tokens():
    one = RequestRecord(index=0, ok=True, completion_tokens=1, ttft_s=0.1, e2e_s=0.2)
    two = RequestRecord(index=0, ok=True, completion_tokens=3, ttft_s=0.1, e2e_s=0.5)
    assert one.tpot_s is None and two.tpot_s == pytest.approx(0.2)
