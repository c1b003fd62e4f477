"""A bisect's tables and its step plot, read from the ``bisect`` record of a results folder.

One definition for the terminal (``python -m pytest_llmbench bisect``), summary.md and report.html: the
steps (builds, ratio [95% CI], outcome, GPU-seconds), the builds (order, identity, what the search learnt)
and the finding ("first slower build: X" or "unknown between X and Y"). An interrupted bisect (a lost
machine: ``bisect_step`` lines and no ``bisect`` line) gets its steps table and plot from the step lines,
with the range so far, the step that never finished and how to go on.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.records.verdict import BisectSoFar, bisect_so_far
from pytest_llmbench.report.rows import Table
from pytest_llmbench.tell import aligned

OUTCOME_COLOR = {"different": "#d62728", "same": "#1f77b4", "unknown": "#7f7f7f", "skip": "#ff7f0e"}
MAX_LABELS = 12  # past this many builds only those the steps compared are named
MAX_WIDTH_IN = 11.0  # the page shows a figure ~1100 px wide: a wider one is scaled down, its text with it
LABEL_PT = 9  # the build labels' size: 12 px on the page
STEP_HEADER = ["step", "kind", "reference → candidate", "metric", "ratio [95% CI]", "outcome", "GPU-s"]
BUILD_HEADER = ["#", "build", "state", "identity"]


def latest(folder: ResultsFolder) -> Mapping[str, Any] | None:
    found = of_kind(folder.records, "bisect")
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


def _step_row(s: Mapping[str, Any]) -> list[str]:
    kind = str(s.get("kind") or "")
    if s.get("attempt"):
        kind += f" (more units ×{2 ** int(s['attempt'])})"
    return [
        str(s.get("step")),
        kind,
        f"{s.get('reference')} → {s.get('candidate')}",
        str(s.get("metric") or "-"),
        _ratio(s),
        _outcome(s),
        f"{float(s.get('gpu_s') or 0):.0f}" + (" (an earlier run's)" if s.get("replayed_from") else ""),
    ]


def step_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    return [_step_row(s) for s in rec.get("steps") or []]


def _regressed(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    return ["REGRESSED" if s.get("outcome") == "different" else "" for s in steps]


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
        so_far = bisect_so_far(folder.records)
        return [interrupted_table(folder, so_far)] if so_far is not None else []
    kinds = _regressed(rec.get("steps") or [])
    return [
        Table(f"Bisect: {rec.get('good')} → {rec.get('bad')}", STEP_HEADER, step_rows(rec), kinds, headline(rec)),
        Table("Bisect builds (in order)", BUILD_HEADER, build_rows(rec), note=to_go_on(rec)),
    ]


def interrupted_table(folder: ResultsFolder, so_far: BisectSoFar) -> Table:
    """The steps an interrupted bisect recorded (no builds table: only a ``bisect`` line lists the builds)."""
    steps = list(so_far.steps)
    return Table(
        f"Bisect (interrupted): {so_far.good} → {so_far.bad}",
        STEP_HEADER,
        [_step_row(s) for s in steps],
        _regressed(steps),
        interrupted_note(folder, so_far),
    )


def unfinished_step(folder: ResultsFolder, so_far: BisectSoFar) -> str:
    """The step whose session started and never answered (its folder is numbered past every step line):
    "step 6 (bisect b11368 → b11378) started and has no outcome (steps/06-…)", or "" when there is none."""
    from pytest_llmbench.bisect.runner import STEP_FOLDER  # where the folders are named

    root = folder.path / "steps"
    started = [
        (int(m["step"]), m)
        for d in (root.iterdir() if root.is_dir() else ())
        if d.is_dir() and (m := STEP_FOLDER.fullmatch(d.name)) and int(m["step"]) > so_far.last_step
    ]
    if not started:
        return ""
    number, m = max(started, key=lambda found: found[0])
    more = f", more units ×{2 ** int(m['attempt'])}" if m["attempt"] else ""
    return f"step {number} ({m['kind']} {m['ref']} → {m['cand']}{more}) started and has no outcome (steps/{m.string})"


def interrupted_note(folder: ResultsFolder, so_far: BisectSoFar) -> str:
    unfinished = unfinished_step(folder, so_far)
    return (
        f"Interrupted after step {so_far.last_step}, no finding recorded: {so_far.so_far}."
        + (f" {unfinished[0].upper()}{unfinished[1:]}." if unfinished else "")
        + f" To go on: python -m pytest_llmbench bisect … --resume {folder.path} (the same builds; the recorded"
        " steps are replayed, not run again)."
    )


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
    ratio inverted), with its 95% interval, coloured by outcome; the culprit range shaded (an interrupted
    bisect's: the range so far, over the builds its steps name)."""
    rec = latest(folder)
    if rec is not None:
        builds = rec.get("builds") or []
        index = {b.get("label"): b.get("index") for b in builds}
        ticks = {i: str(b.get("label")) for i, b in enumerate(builds)}
        shade = (index.get(rec.get("last_good")), index.get(rec.get("first_bad")))
        return _step_plot(rec.get("steps") or [], ticks, shade, rec.get("metric"), len(builds), interrupted=False)
    so_far = bisect_so_far(folder.records)
    if so_far is None:
        return []
    known = {s.get(f"{end}_index"): str(s.get(end)) for s in so_far.steps for end in ("reference", "candidate")}
    ticks = dict(sorted((i, label) for i, label in known.items() if isinstance(i, int)))
    shade = (so_far.last_good_index, so_far.first_bad_index) if so_far.has_range else (None, None)
    size = max(ticks, default=-1) + 1  # the bad end is the last build
    return _step_plot(list(so_far.steps), ticks, shade, so_far.steps[0].get("metric"), size, interrupted=True)


def _step_plot(
    all_steps: Sequence[Any],  # step lines (plain JSON)
    ticks: Mapping[int, str],
    shade: tuple[Any, Any],
    metric: Any,
    size: int,
    *,
    interrupted: bool,
) -> list[Any]:
    steps = [s for s in all_steps if isinstance(s.get("candidate_index"), int)]
    if not steps or not ticks:
        return []
    from pytest_llmbench.report.plots import Plot, _figure, _svg

    # A label per build made the figure 0.5 in per build: 40 builds drew it 22 in wide, and scaled to the
    # page its labels were ~5 px high. The width is capped and, past a dozen builds, only the builds the
    # steps compared (and both ends) are named; the x axis keeps the build order.
    named = {s.get(f"{end}_index") for s in steps for end in ("reference", "candidate")} | {0, size - 1, *shade}
    shown = dict(ticks) if len(ticks) <= MAX_LABELS else {i: t for i, t in ticks.items() if i in named}
    width = min(MAX_WIDTH_IN, max(6.0, 0.3 * size + 2))
    # labels of near builds (b11368, b11378) stand upright when slanted ones would overlap: two parallel
    # labels dx apart at angle a are dx·sin(a) apart, and need a font height (with room to spare)
    places = sorted(shown)
    gap_pt = min((b - a for a, b in itertools.pairwise(places)), default=size) * (width - 1.6) * 72 / size
    rotation = 30 if gap_pt * 0.5 >= 1.3 * LABEL_PT else 90
    fig = _figure(width, 3.8)
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
    lo_i, hi_i = shade
    if isinstance(lo_i, int) and isinstance(hi_i, int):
        ax.axvspan(lo_i + 0.5, hi_i + 0.5, color="#ffd8d8", zorder=-1)  # the first slower build is in (lo, hi]
    ax.axhline(1.0, color="#444", lw=0.6)
    ax.set_xticks(
        list(shown),
        list(shown.values()),
        rotation=rotation,
        ha="right" if rotation < 90 else "center",
        fontsize=LABEL_PT,
    )
    ax.set_xlim(-0.5, size - 0.5)
    ax.set_ylabel(f"{metric}: candidate / reference\n(worse is down)", fontsize=9)
    ax.tick_params(axis="y", labelsize=9)
    if len(shown) < len(ticks):
        ax.set_xlabel(f"build order ({size} builds; the {len(shown)} the steps compared are named)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return [
        Plot(
            "plot-bisect",
            "Bisect steps against build order" + (" (interrupted: the range so far)" if interrupted else ""),
            "Each step's candidate against that step's reference (the nearest build known to be good): dot the "
            "ratio, bar its 95% interval, red different (regressed), blue same, grey unknown, orange × skipped; "
            "shaded: where the first slower build lies (after the last good build, up to the first slower one found)."
            + (" Only the builds the recorded steps compared are named." if interrupted else ""),
            _svg(fig, "plot-bisect"),
        )
    ]


__all__ = ["bisect_tables", "headline", "interrupted_table", "latest", "step_plot", "terminal_lines", "unfinished_step"]
