"""The two sizes of change each compared metric has: the one the gate may ignore and the one it must catch.

- ``ignore``: the largest change the user does not care about. "regressed" means "worse by more than
  ``ignore``", tested at the comparison's alpha, so an unchanged or barely changed candidate (a change
  ≤ ``ignore``) is called regressed with probability ≤ alpha.
- ``detect``: the smallest change the gate must catch. The rounds are planned so that a change of
  ``detect`` is called regressed with ≥ 95% power (compare/power.py); "equivalent" is TOST within
  ± ``detect``: the comparison rules out every change the gate exists to catch.

A size is a ratio (0.03: candidate/reference 3% worse) or an absolute difference (0.1 accept-length tokens,
0.03 = three points of pass rate). The defaults are argued in docs/COMPARE_STATS.md. A metric with no
default and no override is an error naming it: a guessed size would silently decide what counts as a
regression.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

RATIO, DIFFERENCE = "ratio", "difference"


@dataclass(frozen=True)
class Sizes:
    """``kind`` ("ratio" or "difference"), ``ignore`` < ``detect``, both ≥ 0 and in the metric's unit."""

    kind: str
    ignore: float
    detect: float

    def __post_init__(self) -> None:
        if self.kind not in (RATIO, DIFFERENCE):
            raise ValueError(f"kind must be {RATIO!r} or {DIFFERENCE!r}, not {self.kind!r}")
        if not 0 <= self.ignore < self.detect:
            raise ValueError(f"need 0 <= ignore < detect, got ignore {self.ignore:g}, detect {self.detect:g}")
        if self.kind == RATIO and self.detect >= 1:
            raise ValueError(f"a ratio's detect must be < 100%, got {self.detect:g}")

    def describe(self) -> str:
        if self.kind == RATIO:
            return f"ignore {100 * self.ignore:.3g}%, detect {100 * self.detect:.3g}%"
        return f"ignore {self.ignore:.3g}, detect {self.detect:.3g}"


# Whole-name defaults, (kind, ignore, detect); see FAMILIES for names made of these words.
DEFAULT_SIZES: dict[str, tuple[str, float, float]] = {
    "output_throughput": (RATIO, 0.01, 0.03),
    "total_throughput": (RATIO, 0.01, 0.03),
    "input_throughput": (RATIO, 0.01, 0.03),
    "request_throughput": (RATIO, 0.01, 0.03),
    "max_output_tokens_per_s": (RATIO, 0.02, 0.05),  # a 1-s peak window: noisier than the whole-run rate
    "ttft": (RATIO, 0.02, 0.05),
    "tpot": (RATIO, 0.02, 0.05),
    "itl": (RATIO, 0.02, 0.05),
    "e2e_latency": (RATIO, 0.02, 0.05),
    "accept_length": (DIFFERENCE, 0.03, 0.1),
    "server_accept_length": (DIFFERENCE, 0.03, 0.1),
    "pass_rate": (DIFFERENCE, 0.01, 0.03),
    "accuracy": (DIFFERENCE, 0.01, 0.03),
    "correct": (DIFFERENCE, 0.01, 0.03),
    "log_loss": (DIFFERENCE, 0.005, 0.02),  # nats per question; reruns at fixed seeds move it ~0.01 (paired)
    "startup_s": (RATIO, 0.03, 0.10),
    # a search per unit (capacity/): ignore 2%, catch a 10% capacity loss (issue 58; docs/SLO.md)
    "capacity_rps": (RATIO, 0.02, 0.10),
    "gpu_memory_used_gb": (RATIO, 0.005, 0.02),
    "peak_gpu_memory_gb": (RATIO, 0.005, 0.02),
}

# A name's words → its family's sizes, first match wins (median_ttft_ms → latency, bfcl_passed → pass rate).
FAMILIES: tuple[tuple[frozenset[str], tuple[str, float, float]], ...] = (
    (frozenset({"ttft", "tpot", "itl", "e2e", "latency"}), (RATIO, 0.02, 0.05)),
    (frozenset({"throughput", "tps"}), (RATIO, 0.01, 0.03)),
    (frozenset({"accept", "acceptance"}), (DIFFERENCE, 0.03, 0.1)),
    (frozenset({"passed", "pass", "accuracy", "acc", "correct"}), (DIFFERENCE, 0.01, 0.03)),
    (frozenset({"loss"}), (DIFFERENCE, 0.005, 0.02)),
    (frozenset({"startup"}), (RATIO, 0.03, 0.10)),
    (frozenset({"memory", "mem", "rss"}), (RATIO, 0.005, 0.02)),
)


def parse_size(metric: str, value: object, default_kind: str | None = None) -> tuple[str, float]:
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
        raise ValueError(f"size for {metric!r}: kind must be {RATIO!r} or {DIFFERENCE!r}, not {kind!r}")
    if amount < 0 or (kind == RATIO and amount >= 1):
        raise ValueError(f"size for {metric!r}: {value!r} must be >= 0{' and < 100%' if kind == RATIO else ''}")
    return kind, amount


def _number(metric: str, value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f'size for {metric!r}: {value!r} is not a number (e.g. 0.1, "3%")') from None


def default_sizes(metric: str) -> tuple[str, float, float] | None:
    if metric in DEFAULT_SIZES:
        return DEFAULT_SIZES[metric]
    words = {w for w in re.split(r"[^a-z0-9]+", metric.lower()) if w}
    for family, sizes in FAMILIES:
        if words & family:
            return sizes
    return None


#: A latency summary: its statistic and the per-request value it summarises (``p99_ttft_ms`` → p99, ttft).
LATENCY_NAME = re.compile(r"(mean|median|p\d{1,2})_(ttft|tpot|itl|e2e_latency)_ms")
#: Names an override may use for every summary of one latency (``ttft=10%``: mean_, median_, p99_ttft_ms).
LATENCY_WORDS = ("ttft", "tpot", "itl", "e2e_latency")


def override_key(metric: str, table: Mapping[str, object] | None) -> str | None:
    """Which entry of an override table sets ``metric``: its exact name, else its latency word."""
    if table is None:
        return None
    if metric in table:
        return metric
    m = LATENCY_NAME.fullmatch(metric)
    return m.group(2) if m and m.group(2) in table else None


def sizes_for(
    metric: str, detect: Mapping[str, object] | None = None, ignore: Mapping[str, object] | None = None
) -> Sizes:
    """The sizes of ``metric``: overrides by exact name (``detect``, ``ignore``) or by latency word (``ttft``
    for every TTFT summary), else the defaults. An override of ``detect`` alone keeps the default's ratio
    ignore/detect (1% of 3% → a third)."""
    default = default_sizes(metric)
    d_key, i_key = override_key(metric, detect), override_key(metric, ignore)
    if detect is not None and d_key is not None:
        kind, d_detect = parse_size(metric, detect[d_key], default[0] if default is not None else None)
        share = default[1] / default[2] if default is not None and kind == default[0] else 1 / 3
        d_ignore = d_detect * share
    elif default is not None:
        kind, d_ignore, d_detect = default
    else:
        known = ", ".join(sorted(DEFAULT_SIZES))
        raise ValueError(
            f"no comparison size for metric {metric!r}: set detect (e.g. {metric}=0.05 or "
            f"{metric}=3%, and optionally ignore) — metrics with defaults: {known}"
        )
    if ignore is not None and i_key is not None:
        ikind, d_ignore = parse_size(metric, ignore[i_key], kind)
        if ikind != kind:
            raise ValueError(f"size for {metric!r}: ignore is a {ikind} but detect a {kind}")
    try:
        return Sizes(kind, d_ignore, d_detect)
    except ValueError as e:
        raise ValueError(f"sizes for {metric!r}: {e}") from None
