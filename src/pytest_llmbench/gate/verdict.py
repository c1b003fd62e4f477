"""The verdict of one gated metric, and the one-sided comparison every noise model shares.

A noise model decides *how far* a value may move (the tolerance) and says why (the rule); whether that
movement is a regression or an improvement depends only on the metric's direction, so that part lives
here once.
"""

from __future__ import annotations

from typing import Any

from pytest_llmbench.gate.types import Direction, Status, fmt
from pytest_llmbench.stats.verdicts import GATE_STATUS, from_bounds


def judge(baseline: float, observed: float, tolerance: float, direction: Direction) -> Status:
    """One-sided by direction: worse beyond the tolerance regresses, better beyond it improves — the
    comparisons' rule (stats/verdicts.py) with the change itself as both bounds and ± tolerance as the band."""
    change = observed - baseline
    verdict = from_bounds(change, change, band=(-tolerance, tolerance), higher_is_better=direction == "higher")
    return GATE_STATUS[verdict]


def threshold_rule(label: str, baseline: float, tolerance: float, direction: Direction, how: str) -> str:
    """``label: fail if observed < 3.28 − how = 3.124`` (or ``>`` / ``+`` when lower is better)."""
    if direction == "higher":
        return f"{label}: fail if observed < {fmt(baseline)} − {how} = {fmt(baseline - tolerance)}"
    return f"{label}: fail if observed > {fmt(baseline)} + {how} = {fmt(baseline + tolerance)}"


def fail_at_end(report: Any, messages: list[str] | None, heading: str, section: str) -> None:
    """A call or teardown report that passed but carries failed checks fails, listing each (checks never
    raise mid-test, so every one of them is seen); a report that already failed gets them as a section."""
    if report.when not in ("call", "teardown") or not messages:
        return
    text = f"{len(messages)} {heading}:\n" + "\n".join(f"  {m}" for m in messages)
    if report.passed:
        report.outcome = "failed"
        report.longrepr = text
    else:
        report.sections.append((section, text))
