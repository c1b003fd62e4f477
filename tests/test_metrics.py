"""Per-request records → scenario metrics under sglang bench_serving's names and definitions."""

from __future__ import annotations

import math

import pytest

from pytest_llmbench.engines.base import SpecStats
from pytest_llmbench.metrics import mean_se, peak_output_rate, scenario_metrics
from pytest_llmbench.workload.records import RequestRecord


def rec(i, *, started, ttft, e2e, chunks, tokens=None, prompt=10, spec=None, ok=True):
    times = list(chunks)
    toks = list(tokens or [1] * len(times))
    return RequestRecord(
        index=i,
        ok=ok,
        error=None if ok else "HTTP 500",
        prompt_tokens=prompt,
        completion_tokens=sum(toks) if ok else 0,
        ttft_s=ttft,
        e2e_s=e2e,
        started_at=started,
        chunk_times=times,
        chunk_tokens=toks,
        spec=spec,
    )


def test_metrics_follow_bench_serving_definitions():
    a = rec(0, started=100.0, ttft=0.1, e2e=0.5, chunks=[0.1, 0.2, 0.3, 0.5])  # 4 tokens
    b = rec(1, started=100.2, ttft=0.3, e2e=1.0, chunks=[0.3, 0.6, 1.0], tokens=[1, 3, 2])  # 6 tokens, drafted
    failed = rec(2, started=100.1, ttft=None, e2e=0.2, chunks=[], ok=False)
    m = scenario_metrics([a, b, failed], duration_s=2.0)
    assert (m["completed"], m["failed"]) == (2, 1)
    assert m["total_output_tokens"] == 10 and m["total_input_tokens"] == 20  # the failed request counts nothing
    assert m["output_throughput"] == pytest.approx(5.0) and m["request_throughput"] == pytest.approx(1.0)
    assert m["total_throughput"] == pytest.approx(15.0)
    assert m["mean_ttft_ms"] == pytest.approx(200.0) and m["median_ttft_ms"] == pytest.approx(200.0)
    # TPOT = (E2E − TTFT) / (n − 1) per request: (0.4 / 3) and (0.7 / 5)
    assert m["mean_tpot_ms"] == pytest.approx(1000 * (0.4 / 3 + 0.7 / 5) / 2)
    # ITL per token: a chunk of k tokens spreads its gap over k
    itls = [0.1, 0.1, 0.2] + [0.1] * 3 + [0.2] * 2
    assert m["mean_itl_ms"] == pytest.approx(1000 * sum(itls) / len(itls))
    assert m["p99_itl_ms"] <= 200.0 + 1e-9 and m["p90_e2e_latency_ms"] <= 1000.0 + 1e-9
    assert m["concurrency"] == pytest.approx((0.5 + 1.0) / 2.0)
    assert m["max_concurrent_requests"] == 2  # a and b overlap; the failed request is left out
    assert "accept_length" not in m


def test_no_successful_request_gives_zeros_not_errors():
    m = scenario_metrics([rec(0, started=1.0, ttft=None, e2e=None, chunks=[], ok=False)], duration_s=0.0)
    assert m["completed"] == 0 and m["failed"] == 1 and m["output_throughput"] == 0.0
    assert m["mean_ttft_ms"] == 0.0 and m["p99_tpot_ms"] == 0.0


def test_accept_length_per_request_with_its_standard_error_and_the_server_window():
    recs = [
        rec(i, started=0.0, ttft=0.1, e2e=0.5, chunks=[0.1, 0.5], spec=SpecStats(v))
        for i, v in enumerate([2.0, 3.0, 4.0])
    ]
    m = scenario_metrics(recs, 1.0, SpecStats(2.5, drafted=30, accepted=15))
    assert m["accept_length"] == pytest.approx(3.0) and m["accept_length_n"] == 3
    assert m["accept_length_se"] == pytest.approx(1 / math.sqrt(3))  # sd 1, n 3
    assert (m["server_accept_length"], m["server_draft_tokens"], m["server_accepted_tokens"]) == (2.5, 30, 15)
    only_server = scenario_metrics([rec(0, started=0.0, ttft=0.1, e2e=0.2, chunks=[0.1])], 1.0, SpecStats(1.8))
    assert only_server["accept_length"] == 1.8  # the server's window when no request carried its own


def test_mean_se_skips_missing_values_and_needs_two_for_an_se():
    assert mean_se([1.0, None, 3.0]) == (2.0, pytest.approx(1.0), 2)
    mean, se, n = mean_se([5.0])
    assert (mean, n) == (5.0, 1) and math.isnan(se)
    assert math.isnan(mean_se([])[0])


def test_peak_output_rate_counts_tokens_per_one_second_window():
    a = rec(0, started=10.0, ttft=0.1, e2e=0.9, chunks=[0.1, 0.5, 0.9], tokens=[1, 4, 1])
    b = rec(1, started=11.5, ttft=0.2, e2e=1.0, chunks=[0.2, 1.0])
    rate, conc = peak_output_rate([a, b], t0=10.0)
    assert rate == 6.0 and conc == 1  # all of a's tokens fall in second 0; b starts after a ended
