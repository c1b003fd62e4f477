"""The verdict table printed at the end of the session: one row per checked metric, regressions first."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_llmbench.gate.verdict import STATUSES, Verdict, fmt

COLUMNS = ("config", "test", "metric", "baseline", "observed", "delta", "delta %", "tolerance", "verdict")
_LABEL = {"REGRESSED": "REGRESSED", "improved": "improved — consider --update-baselines", "new": "new",
          "pass": "pass"}


def ordered(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """Regressions, then improvements, new, passes; run order within each group."""
    return sorted(verdicts, key=lambda v: STATUSES.index(v.status))


def row(v: Verdict) -> tuple[str, ...]:
    pct = "-" if v.delta_pct is None else f"{v.delta_pct:+.1f}%"
    return (v.config, v.test_key, v.metric, fmt(v.baseline), fmt(v.observed), fmt(v.delta, sign=True), pct,
            fmt(v.tolerance), _LABEL[v.status])


def render(verdicts: Iterable[Verdict]) -> list[str]:
    rows = [COLUMNS, *(row(v) for v in ordered(verdicts))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    numeric = {3, 4, 5, 6, 7}
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def counts(verdicts: Iterable[Verdict]) -> str:
    vs = list(verdicts)
    parts = [f"{sum(v.status == s for v in vs)} {s.lower() if s == 'REGRESSED' else s}" for s in STATUSES]
    return ", ".join(p for p in parts if not p.startswith("0 "))
