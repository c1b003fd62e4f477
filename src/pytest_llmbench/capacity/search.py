"""Capacity under an SLO: the highest request rate whose SLO attainment is ≥ the target, found by probes.

A probe sends one open-loop scenario at a rate and counts its good requests (``vllm bench serve --goodput``
semantics, workload/slo.py). A rate **passes** only when the attainment's one-sided lower confidence bound
(Clopper-Pearson, ``scipy.stats.binomtest``) clears the target, and **fails** when the upper bound is below
it; in between the rate is probed again (the repeats pool their counts) up to ``repeats`` times, and a rate
still undecided fails, so a capacity is never claimed on a lucky run.

The search brackets (doubling up from ``start_rps`` while rates pass, halving down while they fail, as
GuideLLM's goodput profile and AIPerf's SLA search do), then bisects geometrically until the bracket is
narrower than ``resolution`` or the probe budget is spent.

Two numbers come out: ``passed_rps``, the highest rate that passed (what a user may promise), and
``capacity_rps``, the rate where the lower bound crosses the target, interpolated in log rate between the
last passing and the first failing rate. The interpolation stays in that bracket; it exists so that two
searches that ended in the same bracket still differ by how far inside it they crossed, which a comparison
over repeated searches needs (a bracket end alone is a step function: runs of equal values, no spread).

Requests of one probe share its queue, so they are not independent: the binomial bound is the per-probe
rule, not a claim about repeated probes. A comparison judges repeated searches, one per unit
(compare/judging.py's round metrics), never this bound.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from scipy import special

PASS, FAIL, UNDECIDED = "pass", "fail", "undecided"


class CapacityError(ValueError):
    """A capacity spec that cannot be searched; the message names where it came from."""


@dataclass(frozen=True)
class CapacitySpec:
    """How to search. ``target``: the attainment a rate must keep (AIPerf's --slo-attainment-fraction
    default 0.95); ``confidence``: of the one-sided bound; ``start_rps``: the first rate; ``min_rps`` /
    ``max_rps``: where the bracketing gives up; ``resolution``: stop when failing/passing rate ≤ this;
    ``max_probes``: the probe budget (repeats count); ``repeats``: extra probes of an undecided rate."""

    target: float = 0.95
    confidence: float = 0.95
    start_rps: float = 1.0
    min_rps: float = 0.05
    max_rps: float = 1000.0
    resolution: float = 1.1
    max_probes: int = 12
    repeats: int = 1

    def __post_init__(self) -> None:
        if not 0 < self.target < 1 or not 0.5 <= self.confidence < 1:
            raise CapacityError(f"capacity: need 0 < target < 1 and 0.5 ≤ confidence < 1, got {self}")
        if not 0 < self.min_rps <= self.start_rps <= self.max_rps:
            raise CapacityError(f"capacity: need 0 < min_rps ≤ start_rps ≤ max_rps, got {self}")
        if not self.resolution > 1 or self.max_probes < 2 or self.repeats < 0:
            raise CapacityError(f"capacity: need resolution > 1, max_probes ≥ 2, repeats ≥ 0, got {self}")

    @classmethod
    def of(cls, spec: CapacitySpec | Mapping[str, Any], where: str) -> CapacitySpec:
        """A spec from a mapping (a config or Scenario key); an unknown key or bad value names ``where``."""
        if isinstance(spec, CapacitySpec):
            return spec
        if not isinstance(spec, Mapping):
            raise CapacityError(f"{where}: capacity is a mapping (target, start_rps, …), got {type(spec).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(spec) - known)
        if unknown:
            raise CapacityError(f"{where}: unknown capacity key(s) {unknown}; the keys are {sorted(known)}")
        try:
            values: dict[str, Any] = {
                k: (int(v) if k in ("max_probes", "repeats") else float(v)) for k, v in spec.items()
            }
            return cls(**values)
        except (TypeError, ValueError) as e:
            raise CapacityError(f"{where}: {e}") from None


@functools.lru_cache(maxsize=4096)
def bounds(good: int, n: int, confidence: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson lower and upper bounds of the attainment good/n, each at ``confidence``:
    ``scipy.stats.binomtest(good, n).proportion_ci(2 * confidence - 1, method="exact")``, read from the
    beta quantiles it is made of (the same numbers, ~50x faster: the simulation runs millions)."""
    if n <= 0:
        return 0.0, 1.0
    low = float(special.betaincinv(good, n - good + 1, 1 - confidence)) if good > 0 else 0.0
    high = float(special.betaincinv(good + 1, n - good, confidence)) if good < n else 1.0
    return low, high


@dataclass
class Probe:
    """One rate, its pooled counts over its probes, and what they decided."""

    rate: float
    good: int = 0
    n: int = 0
    runs: int = 0
    lower: float = 0.0
    upper: float = 1.0
    outcome: str = UNDECIDED

    def add(self, good: int, n: int, spec: CapacitySpec) -> None:
        self.good, self.n, self.runs = self.good + good, self.n + n, self.runs + 1
        self.lower, self.upper = bounds(self.good, self.n, spec.confidence)
        if self.lower >= spec.target:
            self.outcome = PASS
        elif self.upper < spec.target:
            self.outcome = FAIL
        else:
            self.outcome = UNDECIDED


@dataclass
class Capacity:
    """The search's result; ``capacity_rps`` is 0 when even ``min_rps`` failed, ``max_rps`` when it passed."""

    capacity_rps: float
    passed_rps: float | None
    failed_rps: float | None
    probes: list[Probe] = field(default_factory=list)
    stop: str = ""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["probes"] = [asdict(p) for p in self.probes]
        return d


def crossing(low: Probe, high: Probe, target: float) -> float:
    """Where the lower bound crosses ``target`` between a passing ``low`` and a failing ``high`` rate,
    linear in log rate; within [low.rate, high.rate)."""
    drop = low.lower - high.lower
    share = (low.lower - target) / drop if drop > 0 else 0.0
    share = min(max(share, 0.0), 0.999)
    return math.exp(math.log(low.rate) + share * (math.log(high.rate) - math.log(low.rate)))


def find_capacity(probe: Callable[[float, int], tuple[int, int]], spec: CapacitySpec) -> Capacity:
    """Search with ``probe(rate, run) -> (good, n)`` (``run`` counts the probes of that rate from 0, so a
    repeat can use a fresh seed)."""
    probes: list[Probe] = []

    def spent() -> bool:
        return sum(q.runs for q in probes) >= spec.max_probes

    def decide(rate: float) -> Probe | None:
        """Probe ``rate`` until it passes or fails (at most 1 + repeats runs); None: no budget left."""
        if spent():
            return None
        p = Probe(rate)
        probes.append(p)
        while not spent():
            good, n = probe(rate, p.runs)
            p.add(good, n, spec)
            if p.outcome != UNDECIDED or p.runs > spec.repeats:
                break
        if p.outcome == UNDECIDED:
            p.outcome = FAIL  # never claimed on runs that could not clear the bound
        return p

    lo: Probe | None = None
    hi: Probe | None = None
    rate = spec.start_rps
    stop = "resolution"
    # bracket
    while lo is None or hi is None:
        p = decide(rate)
        if p is None:
            stop = "probe budget spent while bracketing"
            break
        if p.outcome == PASS:
            lo = p
            if hi is None:
                if rate >= spec.max_rps:
                    stop = f"max_rps {spec.max_rps:g} passed"
                    break
                rate = min(rate * 2, spec.max_rps)
        else:
            hi = p
            if lo is None:
                if rate <= spec.min_rps:
                    stop = f"min_rps {spec.min_rps:g} failed"
                    break
                rate = max(rate / 2, spec.min_rps)
    # bisect
    while lo is not None and hi is not None and hi.rate / lo.rate > spec.resolution:
        p = decide(math.sqrt(lo.rate * hi.rate))
        if p is None:
            stop = "probe budget spent"
            break
        if p.outcome == PASS:
            lo = p
        else:
            hi = p
    if lo is not None and hi is not None:
        value = crossing(lo, hi, spec.target)
    else:
        value = lo.rate if lo is not None else 0.0
    return Capacity(
        value,
        lo.rate if lo is not None else None,
        hi.rate if hi is not None else None,
        probes,
        stop,
    )
