"""history.md: the change points of many nights as markdown, new ones first, for ``$GITHUB_STEP_SUMMARY``.

No plots, so a nightly job without the plotting stack still gets its summary and its exit status.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_llmbench.gate.types import fmt
from pytest_llmbench.history.analysis import RESOLVES_3PCT_SD, Finding, night_sd, repinned
from pytest_llmbench.history.series import RATIO, VALUE, Night, Series
from pytest_llmbench.report import rows as R
from pytest_llmbench.report.summary import markdown_table

HEADER = ["", "config", "test", "metric", "first night", "before", "after", "ratio", "95% interval", "good → bad"]


def _builds(f: Finding) -> str:
    text = f"{f.good_build} → {f.bad_build}"
    if f.good_build == f.bad_build and f.setup_changed:
        text += f" (same build; server args {f.setup_change})"
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


def render(
    series: Sequence[Series], nights: Sequence[Night], findings: Sequence[Finding], new: Sequence[Finding], last: int
) -> str:
    worse = sum(f.worse for f in new)
    head = f"❌ {worse} new change point(s) for the worse" if worse else "✅ no new change point for the worse"
    span = f"{nights[0].name} … {nights[-1].name}" if nights else "no nights"
    parts = [
        f"## llmbench history: {head} in the last {last} night(s)",
        "",
        f"{len(nights)} nights ({span}), {len(series)} series, {len(findings)} change point(s) in all.",
    ]
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
