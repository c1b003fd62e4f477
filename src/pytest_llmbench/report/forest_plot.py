"""The forest plots: each comparison's ratio with its 95% interval, on the bands its verdict reads
(the in-session comparisons of report.html), and the ratios B / A of ``compare`` of two runs. Apart from
plots.py because a comparison's figure changes with the comparison's verdict rules, not with the run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.report.plots import Plot, _figure, _svg


def comparison_forest(folder: ResultsFolder) -> list[Plot]:
    """The in-session comparisons: each ratio with its 95% interval on both of its metric's bands, labelled,
    since the verdict reads both (regressed: the interval clears ± ignore; equivalent: it lies inside
    ± detect), worse to the left for every metric; each row says its verdict and, when inconclusive, why."""
    from matplotlib.patches import Patch

    from pytest_llmbench.report.reasons import cause, margins

    comps = [
        c
        for c in folder.comparisons()
        if isinstance(c.get("ratio"), (int, float))
        and isinstance(c.get("ci_low"), (int, float))
        and isinstance(c.get("ci_high"), (int, float))
    ]
    if not comps:
        return []
    fig = _figure(11, 1.3 + 0.42 * len(comps))
    ax = fig.subplots()
    ys = list(range(len(comps)))[::-1]
    colors = {"regressed": "#d62728", "improved": "#2ca02c", "equivalent": "#1f77b4", "inconclusive": "#7f7f7f"}
    for y, c in zip(ys, comps, strict=True):
        flip = not c.get("higher_is_better", True)  # latency: a rise is worse, drawn to the left like a slowdown
        ratio, low, high = (
            (1 / c["ratio"], 1 / c["ci_high"], 1 / c["ci_low"]) if flip else (c["ratio"], c["ci_low"], c["ci_high"])
        )
        verdict = str(c.get("suite_verdict") or c.get("verdict"))
        color = colors.get(verdict, "#7f7f7f")
        ignore, detect = float(c.get("ignore") or 0), float(c.get("detect") or 0)
        ax.fill_betweenx([y - 0.4, y + 0.4], 1 - detect, 1 + detect, color="#cfe2f7", lw=0, zorder=0)
        ax.fill_betweenx([y - 0.4, y + 0.4], 1 - ignore, 1 + ignore, color="#a8a8a8", lw=0, zorder=0.5)
        ax.plot([low, high], [y, y], color=color, lw=2)
        ax.plot([ratio], [y], "o", color=color, markersize=4)
        why = cause(c, detail=False) if verdict == "inconclusive" else None  # the numbers: the table's note
        ax.annotate(
            f"{verdict}{': ' + why if why else ''} · {margins(c)}",
            (1.01, y),
            xycoords=("axes fraction", "data"),
            va="center",
            fontsize=8,
            color=color,
        )
    ax.axvline(1.0, color="#444", lw=0.6)
    ax.set_yticks(
        ys,
        [f"{c.get('config')} · {c.get('scenario') or c.get('test_key')} · {c.get('metric')}" for c in comps],
        fontsize=7,
    )
    ax.set_ylim(-0.6, len(comps) - 0.4)
    ax.set_xlabel("candidate / reference, oriented so that worse is left (latency inverted); 95% interval")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(
        handles=[
            Patch(color="#a8a8a8", label="± ignore: regressed/improved when the interval clears it"),
            Patch(color="#cfe2f7", label="± detect: equivalent when the interval lies inside it"),
        ],
        fontsize=7,
        loc="outside upper center",
        ncol=2,
        frameon=False,
    )
    return [
        Plot(
            "plot-comparisons",
            "Comparisons (reference vs candidate)",
            "Dot: the estimate; bar: its 95% interval, coloured by verdict (red regressed, blue equivalent, "
            "grey inconclusive, green improved); dark grey band: ± ignore (the verdict calls a change regressed "
            "only when the interval clears it); light blue band: ± detect (equivalent only when the interval "
            "lies inside it); right: each row's verdict, why an inconclusive one is, and its two sizes.",
            _svg(fig, "plot-comparisons"),
        )
    ]


def ratio_forest(rows: Sequence[Any]) -> list[Plot]:
    """compare: each ratio B / A with its interval, one line per (config, scenario, metric)."""
    got = [r for r in rows if r.ratio is not None and getattr(r, "kind", "ratio") == "ratio"]
    if not got:
        return []
    fig = _figure(10, 0.8 + 0.24 * len(got))
    ax = fig.subplots()
    ys = list(range(len(got)))[::-1]
    for y, r in zip(ys, got, strict=True):
        color = "#1f77b4" if r.paired else "#7f7f7f"
        if r.low is not None and r.high is not None:
            ax.plot([r.low, r.high], [y, y], color=color, lw=2)
        ax.plot([r.ratio], [y], "o", color=color, markersize=4)
    ax.axvline(1.0, color="#444", lw=0.8, ls=":")
    ax.set_yticks(ys, [f"{r.config} · {r.item} · {r.metric}" for r in got], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("B / A (log scale; blue: paired interval, grey: unpaired or none)")
    ax.grid(axis="x", alpha=0.3)
    return [
        Plot(
            "plot-ratios",
            "Ratios B / A",
            "Dot: the ratio of the two runs' values; bar: the 95% interval of the paired estimate (compare/stats.py).",
            _svg(fig, "plot-ratios"),
        )
    ]
