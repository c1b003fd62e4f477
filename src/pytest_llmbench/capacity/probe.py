"""A capacity scenario run against a server: each probe is the scenario, open loop at the probe's rate.

``run_scenario`` calls :func:`run_capacity` for a Scenario with ``capacity`` set, handing it a function that
runs one plain scenario, so this module never imports the scenario module (one-way imports). The result
is one ScenarioResult, so a comparison session plays it as any other block: ``capacity_rps`` is a round
metric (compare/judging.py), one search per arm per round, judged by the log-ratio t over units.

What the result holds: ``capacity_rps`` and the search's numbers (search.py), ``capacity`` (every probe's
rate, counts, bounds and its latency and throughput, the points of the latency-throughput curve), and the
metrics and requests of the probe at the highest passing rate (the operating point a user may promise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pytest_llmbench.capacity.search import Capacity, CapacitySpec, find_capacity

#: per probe, the scenario metrics kept for the latency-throughput curve (report/pareto.py)
CURVE_KEYS = (
    "request_throughput",
    "output_throughput",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "median_e2e_latency_ms",
    "request_goodput",
    "client_limited",
)


def probe_scenario(sc: Any, rate: float, run: int, first: bool) -> Any:
    """The plain scenario of one probe: open loop at ``rate``, a fresh seed per repeat of a rate, the
    warm-up only before the first probe (the server is warm after it)."""
    return replace(
        sc,
        name=f"{sc.name}@{rate:.4g}rps",
        capacity=None,
        request_rate=rate,
        seed=sc.seed + run,
        warmup=sc.warmup if first else 0,
    )


def run_capacity(sc: Any, run_one: Callable[[Any], Any]) -> Any:
    """Search ``sc.capacity`` with ``run_one(scenario) -> ScenarioResult`` per probe; one ScenarioResult."""
    spec: CapacitySpec = sc.capacity
    results: dict[tuple[float, int], Any] = {}
    curve: list[dict[str, Any]] = []

    def probe(rate: float, run: int) -> tuple[int, int]:
        result = run_one(probe_scenario(sc, rate, run, first=not results))
        results[rate, run] = result
        m = result.metrics
        curve.append({"rate": rate, "run": run, **{k: m.get(k) for k in CURVE_KEYS}})
        return int(m.get("slo_good", 0)), int(m.get("slo_requests", 0))

    cap = find_capacity(probe, spec)
    return combined(sc, cap, results, curve)


def combined(sc: Any, cap: Capacity, results: dict[tuple[float, int], Any], curve: list[dict[str, Any]]) -> Any:
    """One ScenarioResult: the passing probe's requests and metrics (else the lowest rate's), the search."""
    key = (cap.passed_rps, 0) if cap.passed_rps is not None else min(results)
    base = results[key]
    probes = {(p.rate): p for p in cap.probes}
    for point in curve:
        p = probes.get(point["rate"])
        if p is not None:
            point["outcome"] = p.outcome
    metrics = {
        **base.metrics,
        "capacity_rps": cap.capacity_rps,
        "capacity_passed_rps": cap.passed_rps,
        "capacity_failed_rps": cap.failed_rps,
        "capacity_target": sc.capacity.target,
        "capacity_confidence": sc.capacity.confidence,
        "capacity_stop": cap.stop,
        "capacity_probes": sum(p.runs for p in cap.probes),
        "capacity": {**cap.as_dict(), "curve": curve},
    }
    notes = [*base.notes, f"capacity search: {describe(cap, sc.capacity)}"]
    notes += [f"probe {r.scenario.name}: {n}" for r in results.values() if r is not base for n in r.notes]
    return replace(base, scenario=sc, metrics=metrics, notes=notes)


def describe(cap: Capacity, spec: CapacitySpec) -> str:
    """One line: the capacity, what bounded it, the probes spent."""
    where = f"{cap.capacity_rps:.3g} req/s" if cap.capacity_rps else "none"
    bracket = f"passed {cap.passed_rps:.3g}" if cap.passed_rps is not None else "nothing passed"
    if cap.failed_rps is not None:
        bracket += f", failed {cap.failed_rps:.3g}"
    return (
        f"{where} at attainment ≥ {spec.target:g} (lower {spec.confidence:g} bound); {bracket} req/s; "
        f"{sum(p.runs for p in cap.probes)} probes; stop: {cap.stop}"
    )
