"""What the gate infers from a metric's name (direction, hardware-bound) and how it reads an observation.

Defaults from names keep ``bench.check("median_ttft_ms", v)`` short; a name the gate cannot read is an
error rather than a guess, because a wrong direction silently turns a gate around.
"""

from __future__ import annotations

import re

from pytest_llmbench.gate.types import Direction

_HIGHER = frozenset(
    {
        "throughput",
        "tps",
        "accept",
        "acceptance",
        "accuracy",
        "acc",
        "passed",
        "pass",
        "score",
        "correct",
        "completed",
        "agreement",
        "hits",
        "speedup",
        "attainment",
        "goodput",
        "capacity",
    }
)
_LOWER = frozenset(
    {
        "ttft",
        "tpot",
        "itl",
        "latency",
        "e2e",
        "failed",
        "fail",
        "failures",
        "errors",
        "error",
        "memory",
        "mem",
        "loss",
        "ece",
        "brier",
        "kl",
        "duration",
        "startup",
        "ms",
    }
)
_HIGHER_PHRASES = ("per_s", "per_sec")
# Metrics whose value depends on the machine: keyed by runner profile in the baseline file.
_HARDWARE = frozenset(
    {
        "throughput",
        "tps",
        "ttft",
        "tpot",
        "itl",
        "latency",
        "e2e",
        "memory",
        "mem",
        "startup",
        "duration",
        "ms",
        "speedup",
        "goodput",
        "attainment",
        "capacity",
    }
)


def _tokens(metric: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", metric.lower()) if t}


def default_direction(metric: str) -> Direction:
    """``higher`` for throughput/accept_length/accuracy/passed…, ``lower`` for ttft/latency/failed…"""
    toks = _tokens(metric)
    name = metric.lower()
    higher = bool(toks & _HIGHER) or any(p in name for p in _HIGHER_PHRASES)
    lower = bool(toks & _LOWER) and not any(p in name for p in _HIGHER_PHRASES)
    if higher != lower:
        return "higher" if higher else "lower"
    why = "both higher- and lower-is-better words" if higher else "no word the gate knows"
    raise ValueError(
        f"cannot tell whether higher or lower is better for metric {metric!r} ({why} in its name); "
        f"pass direction='higher' or direction='lower' to bench.check"
    )


def resolve_direction(metric: str, direction: str | None) -> Direction:
    if direction is None:
        return default_direction(metric)
    if direction not in ("higher", "lower"):
        raise ValueError(f"direction for metric {metric!r} must be 'higher' or 'lower', not {direction!r}")
    return direction  # type: ignore[return-value]


def default_hardware_bound(metric: str) -> bool:
    """Timing, throughput and memory depend on the runner; quality metrics are shared across runners."""
    name = metric.lower()
    return bool(_tokens(metric) & _HARDWARE) or any(p in name for p in _HIGHER_PHRASES)
