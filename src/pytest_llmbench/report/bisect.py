"""A bisect's tables and its step plot, read from the ``bisect`` record of a results folder.

One definition for the terminal (``python -m pytest_llmbench bisect``), summary.md and report.html: the
steps (builds, ratio [95% CI], outcome, GPU-seconds), the builds (order, identity, what the search learnt)
and the finding ("first slower build: X" or "unknown between X and Y").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_llmbench.report.folder import ResultsFolder
from pytest_llmbench.report.rows import Table
from pytest_llmbench.report.table import render as aligned

OUTCOME_COLOR = {"different": "#d62728", "same": "#1f77b4", "unknown": "#7f7f7f", "skip": "#ff7f0e"}
STEP_HEADER = ["step", "kind", "reference → candidate", "metric", "ratio [95% CI]", "outcome", "GPU-s"]
BUILD_HEADER = ["#", "build", "state", "identity"]


def latest(folder: ResultsFolder) -> Mapping[str, Any] | None:
    found = folder.kind("bisect")
    return found[-1] if found else None


def _ratio(step: Mapping[str, Any]) -> str:
    r, lo, hi = step.get("ratio"), step.get("ci_low"), step.get("ci_high")
    if isinstance(r, (int, float)) and isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        return f"×{r:.3f} [{lo:.3f}, {hi:.3f}]"
    d = step.get("difference")
    if isinstance(d, (int, float)) and isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        return f"{d:+.3g} [{lo:+.3g}, {hi:+.3g}]"
    return "-"


def _outcome(step: Mapping[str, Any]) -> str:
    out = str(step.get("outcome") or "-")
    if out == "skip":
        return f"skip {step.get('skipped')}: {step.get('reason') or ''}".strip()
    if out == "unknown" and step.get("reason"):
        return f"unknown ({step['reason']})"
    return out


def step_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for s in rec.get("steps") or []:
        kind = str(s.get("kind") or "")
        if s.get("attempt"):
            kind += f" (more units ×{2 ** int(s['attempt'])})"
        rows.append(
            [
                str(s.get("step")),
                kind,
                f"{s.get('reference')} → {s.get('candidate')}",
                str(s.get("metric") or "-"),
                _ratio(s),
                _outcome(s),
                f"{float(s.get('gpu_s') or 0):.0f}" + (" (an earlier run's)" if s.get("replayed_from") else ""),
            ]
        )
    return rows


def _identity(b: Mapping[str, Any]) -> str:
    ident = b.get("identity") or {}
    keys = ("version", "digest", "binary_sha256", "folder", "image")
    shown = [f"{k} {ident[k]}" for k in keys if ident.get(k)]
    if b.get("error"):
        shown.append(str(b["error"]))
    return "; ".join(shown) or "(not materialized)"


def build_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    return [
        [str(b.get("index")), str(b.get("label")), str(b.get("state") or "-"), _identity(b)]
        for b in rec.get("builds") or []
    ]


def headline(rec: Mapping[str, Any]) -> str:
    budget = rec.get("budget_s")
    spent = f"{float(rec.get('gpu_s') or 0):.0f} GPU-s" + (f" of {budget:g}" if budget else "")
    return f"{rec.get('message')} — {rec.get('comparisons')} comparisons, {spent}"


def bisect_tables(folder: ResultsFolder) -> list[Table]:
    rec = latest(folder)
    if rec is None:
        return []
    kinds = ["REGRESSED" if s.get("outcome") == "different" else "" for s in rec.get("steps") or []]
    return [
        Table(f"Bisect: {rec.get('good')} → {rec.get('bad')}", STEP_HEADER, step_rows(rec), kinds, headline(rec)),
        Table("Bisect builds (in order)", BUILD_HEADER, build_rows(rec), note=to_go_on(rec)),
    ]


def to_go_on(rec: Mapping[str, Any]) -> str:
    """What a resumed run needs built, in order, when the bisect stopped short ("" when it did not)."""
    builds = rec.get("to_go_on") or []
    return f"To go on (--resume): builds needed, in order: {', '.join(map(str, builds))}" if builds else ""


def terminal_lines(rec: Mapping[str, Any]) -> list[str]:
    """The steps table and the finding, as the CLI prints them."""
    lines = aligned(step_rows(rec), STEP_HEADER, right={0, 6}).splitlines() if rec.get("steps") else []
    return [*lines, "", f"bisect: {headline(rec)}"]


def step_plot(folder: ResultsFolder) -> list[Any]:
    """Each step's ratio against the candidate's place in the build order, worse downwards (a latency's
    ratio inverted), with its 95% interval, coloured by outcome; the culprit range shaded."""
    rec = latest(folder)
    if rec is None:
        return []
    steps = [s for s in rec.get("steps") or [] if isinstance(s.get("candidate_index"), int)]
    builds = rec.get("builds") or []
    if not steps or not builds:
        return []
    from pytest_llmbench.report.plots import Plot, _figure, _svg

    fig = _figure(max(6.0, 0.5 * len(builds) + 2), 3.6)
    ax = fig.subplots()
    points: dict[int, float] = {}
    for s in steps:
        x, color = s["candidate_index"], OUTCOME_COLOR.get(str(s.get("outcome")), "#7f7f7f")
        r, lo, hi = s.get("ratio"), s.get("ci_low"), s.get("ci_high")
        if not all(isinstance(v, (int, float)) and v > 0 for v in (r, lo, hi)):
            ax.plot([x], [1.0], "x", color=color, markersize=8)  # skipped or without a ratio: on the line
            continue
        if s.get("higher_is_better") is False:
            r, lo, hi = 1 / r, 1 / hi, 1 / lo
        ax.plot([x, x], [lo, hi], color=color, lw=2)
        ax.plot([x], [r], "o", color=color, markersize=5)
        points[x] = r
    if points:
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], color="#444", lw=0.8, drawstyle="steps-mid", zorder=0)
    index = {b.get("label"): b.get("index") for b in builds}
    lo_i, hi_i = index.get(rec.get("last_good")), index.get(rec.get("first_bad"))
    if isinstance(lo_i, int) and isinstance(hi_i, int):
        ax.axvspan(lo_i + 0.5, hi_i + 0.5, color="#ffd8d8", zorder=-1)  # the first slower build is in (lo, hi]
    ax.axhline(1.0, color="#444", lw=0.6)
    ax.set_xticks(range(len(builds)), [str(b.get("label")) for b in builds], rotation=30, ha="right", fontsize=7)
    ax.set_xlim(-0.5, len(builds) - 0.5)
    ax.set_ylabel(f"{rec.get('metric')}: candidate / reference\n(worse is down)", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return [
        Plot(
            "plot-bisect",
            "Bisect steps against build order",
            "Each step's candidate against that step's reference (the nearest build known to be good): dot the "
            "ratio, bar its 95% interval, red different (regressed), blue same, grey unknown, orange × skipped; "
            "shaded: where the first slower build lies (after the last good build, up to the first slower one found).",
            _svg(fig, "plot-bisect"),
        )
    ]


__all__ = ["bisect_tables", "headline", "latest", "step_plot", "terminal_lines"]
