"""The verdict table printed at the end of the session: one row per checked metric, regressions first.

``p`` is the gate's raw one-sided p-value ("-" for fixed bands: Relative, Spread), ``q`` the p adjusted
across its family by Holm at session end; a REGRESSED row has p at or under its per-test budget.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_llmbench.gate.verdict import STATUSES, Verdict, fmt, fmt_p

COLUMNS = ("config", "test", "metric", "baseline", "observed", "delta", "delta %", "tolerance", "p", "q", "verdict")
_LABEL = {"REGRESSED": "REGRESSED", "improved": "improved — consider --update-baselines", "new": "new",
          "pass": "pass"}


def ordered(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """Regressions, then improvements, new, passes; run order within each group."""
    return sorted(verdicts, key=lambda v: STATUSES.index(v.status))


def row(v: Verdict) -> tuple[str, ...]:
    pct = "-" if v.delta_pct is None else f"{v.delta_pct:+.1f}%"
    return (v.config, v.test_key, v.metric, fmt(v.baseline), fmt(v.observed), fmt(v.delta, sign=True), pct,
            fmt(v.tolerance), fmt_p(v.p_value), fmt_p(v.q_value), _LABEL[v.status] + (" (paired)" if v.paired else ""))


def render(verdicts: Iterable[Verdict]) -> list[str]:
    rows = [COLUMNS, *(row(v) for v in ordered(verdicts))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    numeric = {3, 4, 5, 6, 7, 8, 9}
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def counts(verdicts: Iterable[Verdict]) -> str:
    vs = list(verdicts)
    parts = [f"{sum(v.status == s for v in vs)} {s.lower() if s == 'REGRESSED' else s}" for s in STATUSES]
    return ", ".join(p for p in parts if not p.startswith("0 "))
