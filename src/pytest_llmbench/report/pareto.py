"""The latency-throughput curve of each arm (issue 58): every probe of its capacity searches, and the Pareto front.

A capacity search probes several open-loop rates (capacity/probe.py keeps each probe's achieved request
throughput and latency as ``metrics.capacity.curve``). Plotted per arm (a config, or the reference and
candidate of a comparison: its ``comparison_block`` records), a point is one probe; the line joins the arm's
Pareto front, the probes no other probe of the arm beats on both throughput (higher) and latency (lower).
Where the front of one arm lies up and to the left of another's, it serves less at every latency.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.report.plots import Plot, _figure, _svg

#: the latency on the y axis, then the one used when a probe lacks it
LATENCY = ("median_e2e_latency_ms", "median_ttft_ms")


def front(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (throughput, latency) points no other point beats on both, by throughput ascending."""
    best: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (-p[0], p[1])):  # highest throughput first
        if not best or y < best[-1][1]:
            best.append((x, y))
    return best[::-1]


def _curve_points(curve: Sequence[dict[str, Any]]) -> list[tuple[float, float, bool]]:
    out = []
    for c in curve:
        x = c.get("request_throughput")
        y = next((c.get(k) for k in LATENCY if isinstance(c.get(k), (int, float))), None)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0:
            out.append((float(x), float(y), c.get("outcome") == "pass"))
    return out


def arm_points(folder: ResultsFolder) -> dict[str, list[tuple[float, float, bool]]]:
    """Arm label → its probes (throughput req/s, latency ms, passed), from scenarios and comparison blocks."""
    arms: dict[str, list[tuple[float, float, bool]]] = {}
    for s in of_kind(folder.records, "scenario"):
        curve = ((s.get("metrics") or {}).get("capacity") or {}).get("curve")
        if curve:
            arms.setdefault(f"{s.get('config')} · {s.get('scenario')}", []).extend(_curve_points(curve))
    for b in of_kind(folder.records, "comparison_block"):
        curve = (b.get("capacity") or {}).get("curve")
        if curve and not b.get("warmup"):
            label = f"{b.get('config')} · {b.get('scenario')} · {b.get('role')}"
            arms.setdefault(label, []).extend(_curve_points(curve))
    return {k: v for k, v in arms.items() if v}


def pareto_plots(folder: ResultsFolder) -> list[Plot]:
    """One figure: every arm's probes and Pareto front; none without a capacity search."""
    arms = arm_points(folder)
    if not arms:
        return []
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    fig = _figure(8, 4.5)
    ax = fig.subplots()
    for i, (label, pts) in enumerate(sorted(arms.items())):
        color = cmap(i % 10)
        ax.scatter(
            [p[0] for p in pts],
            [p[1] for p in pts],
            color=color,
            s=18,
            alpha=0.6,
            marker="o",
            facecolors=[color if p[2] else "none" for p in pts],
        )
        f = front((p[0], p[1]) for p in pts)
        ax.plot([p[0] for p in f], [p[1] for p in f], color=color, label=label, linewidth=1.5)
    ax.set_xlabel("achieved request throughput (req/s)")
    ax.set_ylabel("median E2E latency (ms)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return [
        Plot(
            "plot-pareto",
            "Latency against throughput (capacity probes)",
            "Each point is one probe of a capacity search (filled: the rate passed the SLO); the line is the arm's "
            "Pareto front (no other probe of the arm has both higher throughput and lower latency).",
            _svg(fig, "plot-pareto"),
        )
    ]
