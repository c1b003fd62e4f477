"""The scraped timelines of both arms over a comparison session, for report.html.

One figure per compared scenario (regressed first, at most ``MAX_SCENARIOS``), one panel per quantity
that moved most between the arms (the "what changed" ranking, report/what_changed.py): each block's
/metrics samples drawn at its place in the session (blocks laid end to end in the order they were
played, so a queue that built up in one block or a clock that dropped half-way shows where), reference
and candidate in two colours. Counters are drawn as the per-second rates the samples hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.report.plots import Plot, _figure, _slug, _svg
from pytest_llmbench.report.what_changed import what_changed

MAX_SCENARIOS = 3
PANELS = 4
ARM_COLOR = {"reference": "#1f77b4", "candidate": "#d62728"}


def series_name(quantity: str) -> str:
    """The sample key a ranked quantity is drawn from (``prompt_tokens_total`` → its rate ``prompt_tokens``)."""
    return quantity.removesuffix("_total")


def session_series(blocks: Sequence[Mapping[str, Any]], name: str) -> dict[str, list[list[tuple[float, float]]]]:
    """Per arm, one list of (session seconds, value) per block that sampled ``name``; blocks end to end."""
    out: dict[str, list[list[tuple[float, float]]]] = {}
    t0 = 0.0
    for b in blocks:
        samples = (b.get("telemetry") or {}).get("samples") or []
        pts = [(t0 + float(s["t"]), float(s[name])) for s in samples if name in s and "t" in s]
        if pts:
            out.setdefault(str(b.get("role")), []).append(pts)
        span = max((float(s.get("t", 0.0)) for s in samples), default=0.0)
        t0 += max(span, float(b.get("wall_s") or 0.0))
    return out


def timeline_plots(folder: ResultsFolder) -> list[Plot]:
    """The timelines of both arms for each compared scenario that has samples; empty when none has."""
    blocks = [
        b for b in of_kind(folder.records, "comparison_block") if not b.get("warmup")
    ]  # as the table: measured only
    plots = []
    for w in what_changed(folder)[:MAX_SCENARIOS]:
        mine = [
            b
            for b in blocks
            if (b.get("compare_session"), b.get("nodeid"), b.get("scenario"))
            == (w.compare_session, w.nodeid, w.scenario)
        ]
        names: list[str] = []
        for ch in w.changes:
            name = series_name(ch.quantity)
            if name not in names and any(session_series(mine, name).values()):
                names.append(name)
            if len(names) == PANELS:
                break
        if not names:
            continue
        fig = _figure(10, 1.0 + 1.5 * len(names))
        axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
        for ax, name in zip(axes, names, strict=True):
            for role, runs in session_series(mine, name).items():
                for i, pts in enumerate(runs):
                    ax.plot(
                        [p[0] for p in pts],
                        [p[1] for p in pts],
                        "-o",
                        color=ARM_COLOR.get(role, "#7f7f7f"),
                        markersize=2,
                        lw=1,
                        label=role if i == 0 else None,
                    )
            ax.set_ylabel(name, fontsize=8)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7, loc="upper right")
        axes[-1].set_xlabel("seconds of measured blocks, in play order")
        pid = f"plot-timeline-{_slug(w.config + '-' + w.scenario)}"
        plots.append(
            Plot(
                pid,
                f"Timelines: {w.config} · {w.scenario}" + (" (REGRESSED)" if w.regressed else ""),
                "The server's /metrics (and GPU) samples of each comparison block, blocks laid end to end in "
                "play order; blue reference, red candidate; the panels are the quantities that moved most "
                "between the arms (the 'what changed' table); counters as per-second rates.",
                _svg(fig, pid),
            )
        )
    return plots
