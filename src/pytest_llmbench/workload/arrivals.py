"""Open-loop arrivals: when each request is sent, fixed before the run from a seed.

As ``vllm bench serve`` / sglang's bench_serving ``--request-rate R --burstiness k``: gaps are gamma with
shape k and mean 1/R (k = 1 is a Poisson process; the gaps' coefficient of variation is 1/√k). The
schedule depends only on (rate, burstiness, ramp-up, n, seed), so both arms of a comparison send the
same requests at the same offsets.

Ramp-up: over the first ``ramp_up_s`` seconds the rate rises linearly from 0 to R. The gaps are drawn
in "operational time" (a unit-rate process) and mapped through the inverse of the cumulative rate
Λ(t) = R·t²/(2·T) for t < T, R·(t − T/2) after, which is exactly an inhomogeneous process with that ramp.

The client lag (actual send − scheduled send) says whether the load generator kept up: a lag that
grows past a fraction of the mean gap means the client, not the server, set the pace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pytest_llmbench.workload.records import RequestRecord

#: The client limited the run when the p99 send lag passes this share of the mean gap (or 50 ms).
LAG_SHARE = 0.5
LAG_FLOOR_MS = 50.0


def schedule(n: int, rate: float, *, burstiness: float = 1.0, seed: int = 1, ramp_up_s: float = 0.0) -> list[float]:
    """Send offsets in seconds from the start (the first request at 0 unless ramping), ascending.

    ``rate`` = inf sends everything at 0 (bench_serving's default)."""
    if n < 1:
        return []
    if not rate > 0:
        raise ValueError(f"request_rate must be > 0, got {rate!r}")
    if not burstiness > 0:
        raise ValueError(f"burstiness must be > 0, got {burstiness!r}")
    if math.isinf(rate):
        return [0.0] * n
    rng = np.random.default_rng(seed)
    # Gamma(k, θ = 1/(k·R)): mean 1/R, CV 1/√k. The first request goes at once (as bench_serving's does).
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (burstiness * rate), size=n - 1)
    offsets = np.concatenate([[0.0], np.cumsum(gaps)])
    if ramp_up_s > 0:
        offsets = _ramped(offsets * rate, rate, ramp_up_s)
    return [float(x) for x in offsets]


def _ramped(op_time: np.ndarray, rate: float, ramp_s: float) -> np.ndarray:
    """Operational times (expected arrivals so far) → wall times under a linear ramp: Λ⁻¹(u)."""
    knee = rate * ramp_s / 2.0  # Λ(T)
    inside = np.sqrt(2.0 * ramp_s * np.maximum(op_time, 0.0) / rate)
    after = op_time / rate + ramp_s / 2.0
    return np.where(op_time < knee, inside, after)


def lag_metrics(records: Sequence[RequestRecord], rate: float) -> dict[str, Any]:
    """Scheduled-vs-actual send lag (ms) over the sent requests, and whether the client limited the run."""
    lags = [1e3 * r.send_lag_s for r in records if r.send_lag_s is not None]
    if not lags:
        return {}
    arr = np.asarray(lags, dtype=float)
    mean_gap_ms = 1e3 / rate if rate > 0 and not math.isinf(rate) else float("inf")
    p99 = float(np.percentile(arr, 99))
    limit = max(LAG_FLOOR_MS, LAG_SHARE * mean_gap_ms) if math.isfinite(mean_gap_ms) else LAG_FLOOR_MS
    return {
        "mean_send_lag_ms": float(arr.mean()),
        "p99_send_lag_ms": p99,
        "max_send_lag_ms": float(arr.max()),
        "client_limited": bool(p99 > limit),
    }


def lag_note(metrics: dict[str, Any], rate: float) -> str | None:
    """The sentence a report prints when the client could not keep the schedule."""
    if not metrics.get("client_limited"):
        return None
    return (
        f"client-limited: p99 send lag {metrics['p99_send_lag_ms']:.1f} ms at request_rate {rate:g}/s "
        f"(limit max({LAG_FLOOR_MS:g} ms, {LAG_SHARE:g} x mean gap)); the load generator, not the server, "
        "set the pace: these latencies under-state the offered load"
    )
