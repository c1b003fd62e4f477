"""history.md: the change points of many nights as markdown, new ones first, for ``$GITHUB_STEP_SUMMARY``.

No plots, so a nightly job without the plotting stack still gets its summary and its exit status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_llmbench.gate.types import fmt
from pytest_llmbench.history.analysis import (
    MIN_NIGHTS,
    RESOLVES_3PCT_SD,
    Finding,
    judged_nights,
    night_sd,
    repinned,
    waiting,
)
from pytest_llmbench.history.changepoints import DEFAULT_MAX_P
from pytest_llmbench.history.series import RATIO, VALUE, Night, Series
from pytest_llmbench.report import rows as R
from pytest_llmbench.report.summary import markdown_table

HEADER = ["", "config", "test", "metric", "first night", "before", "after", "ratio", "95% interval", "good → bad"]


def _builds(f: Finding) -> str:
    text = f"{f.good_build} → {f.bad_build}"
    if f.good_build == f.bad_build and f.setup_changed:
        text += f" (same build; server args {f.setup_change})"
    if f.provisional:
        text += " (the last night alone: the next night confirms or drops it)"
    return text


def findings_table(findings: Sequence[Finding], title: str) -> R.Table:
    rows, kinds = [], []
    for f in findings:
        c, k = f.change, f.series.key
        rows.append(
            [
                "worse" if f.worse else "better",
                k.config,
                k.test.split("::")[-1],
                f"{k.metric} / reference" if k.kind == RATIO else k.metric,
                f.first_after.night,
                fmt(c.before),
                fmt(c.after),
                f"×{c.ratio:.3f}",
                f"[{c.ratio_low:.3f}, {c.ratio_high:.3f}]",
                _builds(f),
            ]
        )
        kinds.append("REGRESSED" if f.worse else "improved")
    return R.Table(title, HEADER, rows, kinds)


def headline(series: Sequence[Series], new: Sequence[Finding], last: int) -> tuple[str, str]:
    """(the one line, its tone: bad, neutral or good). Never green before the detector can judge: until some
    series has ``MIN_NIGHTS`` judged nights it says NOT JUDGED with how many it has."""
    worse = sum(f.worse for f in new)
    if worse:
        return f"❌ {worse} new change point(s) for the worse in the last {last} night(s)", "bad"
    if not any(judged_nights(s) >= MIN_NIGHTS for s in series):
        k = max((judged_nights(s) for s in series), default=0)
        return (
            f"⚪ NOT JUDGED ({k} of {MIN_NIGHTS} nights): the detector looks for change points from "
            f"{MIN_NIGHTS} judged nights on",
            "neutral",
        )
    return f"✅ no new change point for the worse in the last {last} night(s)", "good"


def render(
    series: Sequence[Series],
    nights: Sequence[Night],
    findings: Sequence[Finding],
    new: Sequence[Finding],
    last: int,
    *,
    families: Mapping[str, int] | None = None,
    max_p: float = DEFAULT_MAX_P,
) -> str:
    head, _ = headline(series, new, last)
    span = f"{nights[0].name} … {nights[-1].name}" if nights else "no nights"
    parts = [
        f"## llmbench history: {head}",
        "",
        f"{len(nights)} nights ({span}), {len(series)} series, {len(findings)} change point(s) in all.",
    ]
    if families:
        each = ", ".join(f"{fam} {m} series (each at p ≤ {max_p / m:.2g})" for fam, m in sorted(families.items()))
        parts += [
            "",
            f"False change points are held per family at p {max_p:g}, split over its series (Bonferroni): {each}.",
        ]
    pending = waiting(series)
    if pending and len(pending) < len(series):
        named = ", ".join(f"{s.key.label()} ({k} of {MIN_NIGHTS})" for s, k in pending[:5])
        more = f" and {len(pending) - 5} more" if len(pending) > 5 else ""
        parts += ["", f"Not judged yet (fewer than {MIN_NIGHTS} judged nights since the last re-pin): {named}{more}."]
    parts += _resolution(series, findings)
    if new:
        parts += ["", markdown_table(findings_table(new, f"New in the last {last} night(s)"))]
    older = [f for f in findings if f not in new]
    if older:
        parts += ["", markdown_table(findings_table(older, "Earlier change points"))]
    pins = _repins(series)
    if pins:
        parts += ["", "Reference re-pinned (each starts a new segment of its ratio series, never a change point):"]
        parts += [f"- {line}" for line in pins]
    return "\n".join(parts) + "\n"


def _resolution(series: Sequence[Series], findings: Sequence[Finding]) -> list[str]:
    """The median night-to-night SD of each kind of series: what the nights can resolve, in one line each."""
    lines = []
    for kind, what in ((VALUE, "nights' own values"), (RATIO, "ratios to the pinned reference")):
        sds = sorted(sd for s in series if s.key.kind == kind and (sd := night_sd(s, findings)) is not None)
        if sds:
            median = sds[len(sds) // 2]
            verdict = "resolves" if median <= RESOLVES_3PCT_SD else "cannot resolve"
            lines.append(
                f"Night-to-night SD of the {what}: median {100 * median:.1f}% over {len(sds)} series; this "
                f"{verdict} a 3% step within 5 nights (needs ≤ {100 * RESOLVES_3PCT_SD:.2f}%, docs/HISTORY.md)."
            )
    return ["", *lines] if lines else []


def _repins(series: Sequence[Series]) -> list[str]:
    """One line per re-pin night and reference change, however many metrics' series share it."""
    lines: dict[str, None] = {}
    for s in series:
        for i in repinned(s):
            before, after = s.points[i - 1], s.points[i]
            lines.setdefault(f"{s.key.config}: {after.night} ({before.reference} → {after.reference})", None)
    return list(lines)
