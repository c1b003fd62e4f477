"""How big a change must be before a comparison calls it a regression (or calls two arms equivalent).

A margin is either a ratio (0.03: candidate/reference outside [0.97, 1.03]) or an absolute difference
(0.1 accept-length tokens, 0.03 = three points of pass rate). The values are argued from measured noise in
docs/COMPARE_STATS.md. A metric with no default and no override is an error naming it: a guessed margin
would silently decide what counts as a regression.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

RATIO, DIFFERENCE = "ratio", "difference"

# Whole-name defaults; see FAMILIES for names made of these words (median_ttft_ms, p99_itl_ms, ...).
DEFAULT_MARGINS: dict[str, tuple[str, float]] = {
    "output_throughput": (RATIO, 0.03),
    "total_throughput": (RATIO, 0.03),
    "input_throughput": (RATIO, 0.03),
    "request_throughput": (RATIO, 0.03),
    "max_output_tokens_per_s": (RATIO, 0.05),  # a 1-s peak window: noisier than the whole-run rate
    "ttft": (RATIO, 0.05),
    "tpot": (RATIO, 0.05),
    "itl": (RATIO, 0.05),
    "e2e_latency": (RATIO, 0.05),
    "accept_length": (DIFFERENCE, 0.1),
    "server_accept_length": (DIFFERENCE, 0.1),
    "pass_rate": (DIFFERENCE, 0.03),
    "accuracy": (DIFFERENCE, 0.03),
    "correct": (DIFFERENCE, 0.03),
    "log_loss": (DIFFERENCE, 0.02),  # nats per question; reruns at fixed seeds move it ~0.01 (paired)
    "startup_s": (RATIO, 0.10),
    "gpu_memory_used_gb": (RATIO, 0.02),
    "peak_gpu_memory_gb": (RATIO, 0.02),
}

# A name's words → its family's margin, first match wins (median_ttft_ms → latency, bfcl_passed → pass rate).
FAMILIES: tuple[tuple[frozenset[str], tuple[str, float]], ...] = (
    (frozenset({"ttft", "tpot", "itl", "e2e", "latency"}), (RATIO, 0.05)),
    (frozenset({"throughput", "tps"}), (RATIO, 0.03)),
    (frozenset({"accept", "acceptance"}), (DIFFERENCE, 0.1)),
    (frozenset({"passed", "pass", "accuracy", "acc", "correct"}), (DIFFERENCE, 0.03)),
    (frozenset({"loss"}), (DIFFERENCE, 0.02)),
    (frozenset({"startup"}), (RATIO, 0.10)),
    (frozenset({"memory", "mem", "rss"}), (RATIO, 0.02)),
)


def parse_margin(metric: str, value: object, default_kind: str | None = None) -> tuple[str, float]:
    """``0.05`` (the metric's own kind, difference if it has none), ``"3%"`` (a ratio),
    ``("ratio", 0.03)``."""
    if isinstance(value, tuple) and len(value) == 2:
        kind, amount = value
    elif isinstance(value, str) and value.strip().endswith("%"):
        kind, amount = RATIO, _number(metric, value.strip()[:-1]) / 100
    else:
        kind, amount = default_kind or DIFFERENCE, _number(metric, value)
    amount = _number(metric, amount)
    if kind not in (RATIO, DIFFERENCE):
        raise ValueError(f"margin for {metric!r}: kind must be {RATIO!r} or {DIFFERENCE!r}, not {kind!r}")
    if amount < 0 or (kind == RATIO and amount >= 1):
        raise ValueError(f"margin for {metric!r}: {value!r} must be >= 0{' and < 100%' if kind == RATIO else ''}")
    return kind, amount


def _number(metric: str, value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"margin for {metric!r}: {value!r} is not a number (e.g. 0.1, \"3%\")") from None


def default_margin(metric: str) -> tuple[str, float] | None:
    if metric in DEFAULT_MARGINS:
        return DEFAULT_MARGINS[metric]
    words = {w for w in re.split(r"[^a-z0-9]+", metric.lower()) if w}
    for family, margin in FAMILIES:
        if words & family:
            return margin
    return None


def margin_for(metric: str, overrides: Mapping[str, object] | None = None) -> tuple[str, float]:
    """``(kind, margin)`` for ``metric``: an override by exact name, else the defaults."""
    default = default_margin(metric)
    if overrides and metric in overrides:
        return parse_margin(metric, overrides[metric], default[0] if default else None)
    if default is None:
        known = ", ".join(sorted(DEFAULT_MARGINS))
        raise ValueError(f"no comparison margin for metric {metric!r}: set one (e.g. {metric}=0.05 or "
                         f"{metric}=3%) — metrics with defaults: {known}")
    return default
