"""Per-request records → scenario metrics, named as sglang's bench_serving names them.

Definitions follow ``sglang.benchmark.serving`` so numbers compare with what users already run:
TTFT is the first chunk with content (reasoning counts); TPOT = (E2E − TTFT)/(n − 1); ITL is per
chunk gap divided over the tokens in the chunk; failed requests count 0 output tokens and are left out
of latency statistics; output throughput is all output tokens over the whole scenario, prefill included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, TypedDict, cast

import numpy as np
from scipy import stats

if TYPE_CHECKING:
    from pytest_llmbench.engines.base import SpecStats
    from pytest_llmbench.workload.records import RequestRecord

PERCENTILES = (90, 95, 99)


class ScenarioMetrics(TypedDict, total=False):
    """A scenario's numbers, keyed as sglang bench_serving names them (times in ms unless named _s).

    Latency groups ``{mean,median,std,p90,p95,p99}_{ttft,tpot,itl,e2e_latency}_ms`` are all present;
    the accept-length keys only when the engine reports speculative decoding.
    """

    completed: int
    failed: int
    duration: float
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    input_throughput: float
    output_throughput: float
    total_throughput: float
    mean_ttft_ms: float
    median_ttft_ms: float
    std_ttft_ms: float
    p90_ttft_ms: float
    p95_ttft_ms: float
    p99_ttft_ms: float
    mean_tpot_ms: float
    median_tpot_ms: float
    std_tpot_ms: float
    p90_tpot_ms: float
    p95_tpot_ms: float
    p99_tpot_ms: float
    mean_itl_ms: float
    median_itl_ms: float
    std_itl_ms: float
    p90_itl_ms: float
    p95_itl_ms: float
    p99_itl_ms: float
    mean_e2e_latency_ms: float
    median_e2e_latency_ms: float
    std_e2e_latency_ms: float
    p90_e2e_latency_ms: float
    p95_e2e_latency_ms: float
    p99_e2e_latency_ms: float
    concurrency: float
    max_output_tokens_per_s: float
    max_concurrent_requests: int
    accept_length: float
    accept_length_se: float
    accept_length_n: int
    server_accept_length: float
    server_draft_tokens: int | None
    server_accepted_tokens: int | None


def mean_se(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean (scipy.stats.sem, ddof=1) and n; SE is nan below 2 values."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan"), 0
    se = float(stats.sem(arr)) if arr.size > 1 else float("nan")
    return float(arr.mean()), se, int(arr.size)


def _summary(prefix: Literal["ttft", "tpot", "itl", "e2e_latency"], values_s: Sequence[float]) -> ScenarioMetrics:
    """``{mean,median,std,p90,p95,p99}_{prefix}_ms``: for the latency prefixes, keys ScenarioMetrics declares."""
    arr = np.asarray(values_s, dtype=float) * 1000.0
    if arr.size == 0:
        out = {f"{k}_{prefix}_ms": 0.0 for k in ("mean", "median", "std", "p90", "p95", "p99")}
    else:
        out = {
            f"mean_{prefix}_ms": float(arr.mean()),
            f"median_{prefix}_ms": float(np.median(arr)),
            f"std_{prefix}_ms": float(arr.std()),
        }
        for p in PERCENTILES:
            out[f"p{p}_{prefix}_ms"] = float(np.percentile(arr, p))
    return cast(ScenarioMetrics, out)  # keys built from the prefix: mypy cannot check them against the TypedDict


def peak_output_rate(records: Sequence[RequestRecord], t0: float, window_s: float = 1.0) -> tuple[float, int]:
    """Highest output tokens/s in any 1-s window, and the most requests in flight at once."""
    times, weights = [], []
    events = []
    for r in records:
        if not r.ok:
            continue
        for t, k in zip(r.chunk_times, r.chunk_tokens, strict=True):
            times.append(r.started_at + t - t0)
            weights.append(k)
        events.append((r.started_at - t0, 1))
        events.append((r.started_at - t0 + (r.e2e_s or 0.0), -1))
    peak_rate = 0.0
    if times:
        bins = np.floor(np.asarray(times) / window_s).astype(int)
        peak_rate = float(np.bincount(bins - bins.min(), weights=weights).max() / window_s)
    running = peak_conc = 0
    for _, d in sorted(events, key=lambda e: (e[0], e[1])):
        running += d
        peak_conc = max(peak_conc, running)
    return peak_rate, peak_conc


def scenario_metrics(
    records: Sequence[RequestRecord], duration_s: float, spec_server: SpecStats | None = None
) -> ScenarioMetrics:
    """The scenario's numbers; keys match sglang bench_serving's JSONL where the metric is the same."""
    ok = [r for r in records if r.ok]
    total_out = sum(r.completion_tokens for r in ok)
    total_in = sum(r.prompt_tokens or 0 for r in ok)
    duration_s = max(duration_s, 1e-9)
    m: ScenarioMetrics = {
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "duration": duration_s,
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration_s,
        "input_throughput": total_in / duration_s,
        "output_throughput": total_out / duration_s,
        "total_throughput": (total_in + total_out) / duration_s,
    }
    m.update(_summary("ttft", [r.ttft_s for r in ok if r.ttft_s is not None]))
    m.update(_summary("tpot", [t for r in ok if (t := r.tpot_s) is not None]))
    m.update(_summary("itl", [x for r in ok for x in r.itls_s()]))
    m.update(_summary("e2e_latency", [r.e2e_s for r in ok if r.e2e_s is not None]))
    m["concurrency"] = sum(r.e2e_s or 0.0 for r in ok) / duration_s
    if records:
        t0 = min(r.started_at for r in records)
        m["max_output_tokens_per_s"], m["max_concurrent_requests"] = peak_output_rate(records, t0)
    accept = [r.spec.accept_length for r in ok if r.spec is not None and r.spec.accept_length is not None]
    if accept:
        mean, se, n = mean_se(accept)
        m["accept_length"], m["accept_length_se"], m["accept_length_n"] = mean, se, n
    if spec_server is not None and spec_server.accept_length is not None:
        m["server_accept_length"] = spec_server.accept_length
        m["server_draft_tokens"] = spec_server.drafted
        m["server_accepted_tokens"] = spec_server.accepted
        m.setdefault("accept_length", spec_server.accept_length)
    return m
