"""The verdict table printed at the end of the session: one row per checked metric, regressions first.

``p`` is the gate's raw one-sided p-value ("-" for fixed bands: Relative, Spread), ``q`` the p adjusted
across its family by Holm at session end; a REGRESSED row has p at or under its per-test budget.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pytest_llmbench.gate.types import JUDGED, STATUSES, Verdict, fmt, fmt_p

COLUMNS = ("config", "test", "metric", "baseline", "observed", "delta", "delta %", "tolerance", "p", "q", "verdict")
_LABEL = {
    "REGRESSED": "REGRESSED",
    "improved": "improved — consider --update-baselines",
    "new": "new",
    "pass": "pass",
    "learning": "learning",
    "not comparable": "not comparable",
}


def ordered(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """Regressions, then improvements, new, passes; run order within each group."""
    return sorted(verdicts, key=lambda v: STATUSES.index(v.status))


def row(v: Verdict) -> tuple[str, ...]:
    pct = "-" if v.delta_pct is None else f"{v.delta_pct:+.1f}%"
    return (
        v.config,
        v.test_key,
        v.metric,
        fmt(v.baseline),
        fmt(v.observed),
        fmt(v.delta, sign=True),
        pct,
        fmt(v.tolerance),
        fmt_p(v.p_value),
        fmt_p(v.q_value),
        label(v),
    )


def label(v: Verdict) -> str:
    text = _LABEL[v.status]
    if v.status == "learning":
        m = _LEARNING.search(v.rule)
        text += f" ({m.group(1)} of {m.group(2)})" if m else ""
    if v.status == "REGRESSED" and v.recorded:
        text += " (recorded, not failing)"
    if v.status == "improved" and v.recorded:
        text = "improved (recorded)"
    return text + (" (paired)" if v.paired else "")


def render(verdicts: Iterable[Verdict]) -> list[str]:
    rows = [COLUMNS, *(row(v) for v in ordered(verdicts))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    numeric = {3, 4, 5, 6, 7, 8, 9}
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return lines


_LEARNING = re.compile(r"(\d+) of (\d+) runs recorded")


def counts(verdicts: Iterable[Verdict]) -> str:
    vs = list(verdicts)
    parts = [f"{sum(v.status == s for v in vs)} {s.lower() if s == 'REGRESSED' else s}" for s in STATUSES]
    return ", ".join(p for p in parts if not p.startswith("0 "))


def summary(verdicts: Sequence[Verdict]) -> str:
    """The run's one line: what was judged, apart from what was not — so "0 REGRESSED" never hides
    "nothing was compared"."""
    judged = [v for v in verdicts if v.status in JUDGED]
    rest = [v for v in verdicts if v.status not in JUDGED]
    head = f"llmbench: {len(judged)} of {len(verdicts)} checks judged"
    if judged:
        head += f" ({counts(judged)})"
    if rest:
        head += f"; not judged: {counts(rest)}"
    return head


def not_judged(verdicts: Iterable[Verdict]) -> list[str]:
    """Why checks were not judged, one line per reason (a busy host names the scenario and the neighbour)."""
    reasons: dict[str, list[Verdict]] = {}
    for v in verdicts:
        if v.status == "not comparable":
            reasons.setdefault(v.rule, []).append(v)
    lines = []
    for rule, vs in reasons.items():
        tests = sorted({f"{v.config} {v.test_key}" for v in vs})
        shown = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
        lines.append(f"  not comparable ({len(vs)} checks: {shown}): {rule}")
    return lines
