"""What the gate infers from a metric's name (direction, hardware-bound) and how it reads an observation.

Defaults from names keep ``bench.check("median_ttft_ms", v)`` short; a name the gate cannot read is an
error rather than a guess, because a wrong direction silently turns a gate around.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from numbers import Real

import numpy as np
from scipy import stats

from pytest_llmbench.gate.cases import clean_cases
from pytest_llmbench.gate.verdict import Direction

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


@dataclass(frozen=True)
class Observation:
    """A measured value with what is known about its noise: SE and n from per-sample values, or a count."""

    value: float
    se: float | None = None
    n: int | None = None
    samples: int = 0  # how many per-sample values the value was computed from (0: a single number)
    cases: Mapping[str, float] | None = None  # per-case values keyed by case id (paired gates)

    @classmethod
    def of(
        cls, observed: object = None, *, n: object = None, se: object = None, cases: Mapping[str, object] | None = None
    ) -> Observation:
        """A number, a sequence of per-sample values (mean, SE, n from them), or a count ``k`` with ``n``.

        ``se`` and ``n`` are checked here, not where they are used: a NaN or negative SE would make the
        tolerance NaN or negative, and a NaN tolerance passes anything. ``cases`` ({case id: value},
        finite values) rides along for the paired noise models; with ``observed=None`` the case values
        are the per-sample values.
        """
        se_f = check_se(se, "se=")
        n_i = check_n(n, "n=")
        if cases is not None:
            checked = clean_cases(cases)
            base = cls.of(list(checked.values()) if observed is None else observed, n=n_i, se=se_f)
            return replace(base, cases=checked)
        if observed is None:
            raise TypeError("observed is None: pass a value, per-sample values, or cases={case id: value}")
        if isinstance(observed, bool | str | bytes):
            raise TypeError(f"observed must be a number or a sequence of numbers, not {type(observed).__name__}")
        if isinstance(observed, Real | np.number):
            value = float(observed)
            if not math.isfinite(value):
                raise ValueError(f"observed value is {value}")
            return cls(value=value, se=se_f, n=n_i)
        if isinstance(observed, Sequence | np.ndarray):
            arr = np.asarray(observed, dtype=float).ravel()
            if arr.size == 0:
                raise ValueError("observed is an empty sequence: nothing was measured")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"observed values contain {int(np.sum(~np.isfinite(arr)))} non-finite entries")
            sem = float(stats.sem(arr)) if arr.size > 1 else None
            return cls(
                value=float(np.mean(arr)),
                se=sem if se_f is None else se_f,
                n=int(arr.size) if n_i is None else n_i,
                samples=int(arr.size),
            )
        raise TypeError(f"observed must be a number or a sequence of numbers, not {type(observed).__name__}")


def check_se(se: object, what: str) -> float | None:
    """A standard error is a finite number >= 0 (or absent); anything else is an error naming ``what``."""
    if se is None:
        return None
    if isinstance(se, bool) or not isinstance(se, Real | np.number):
        raise TypeError(f"{what} must be a number, not {type(se).__name__} ({se!r})")
    f = float(se)
    if not math.isfinite(f) or f < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {f}")
    return f


def check_n(n: object, what: str) -> int | None:
    """A sample size is a whole number >= 1 (or absent)."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {n!r}")
    return int(n)
