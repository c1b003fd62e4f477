"""The verdict of one gated metric, and the one-sided comparison every noise model shares.

A noise model decides *how far* a value may move (the tolerance) and says why (the rule); whether that
movement is a regression or an improvement depends only on the metric's direction, so that part lives
here once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

Direction = Literal["higher", "lower"]
Status = Literal["pass", "REGRESSED", "improved", "new", "learning", "not comparable"]

STATUSES: tuple[Status, ...] = ("REGRESSED", "improved", "not comparable", "learning", "new", "pass")  # table order
#: What a run judged: the other statuses say why a check was *not* compared, and never fail a test.
JUDGED: tuple[Status, ...] = ("REGRESSED", "improved", "pass")


@dataclass(frozen=True)
class Verdict:
    """One row of the verdict table; also written to results.jsonl and the JUnit XML."""

    metric: str
    observed: float
    baseline: float | None
    tolerance: float | None
    rule: str
    status: Status
    direction: Direction
    noise: str
    config: str = ""
    test_key: str = ""
    runner: str | None = None  # the runner profile for hardware-bound metrics, None when shared
    p_value: float | None = None  # one-sided, from the rule's own test; None for fixed bands (Relative, Spread)
    q_value: float | None = None  # p adjusted across the family's gates at session end (Holm)
    paired: bool = False  # judged case by case against the baseline's own cases
    family: str = ""  # the error budget it counts against: timing / quality / decisions
    recorded: bool = False  # judged while recording (--update-baselines=all): shown, never failing

    @property
    def delta(self) -> float | None:
        return None if self.baseline is None else self.observed - self.baseline

    @property
    def delta_pct(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return 100.0 * (self.observed - self.baseline) / abs(self.baseline)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["delta"] = self.delta
        d["delta_pct"] = self.delta_pct
        return d

    def message(self) -> str:
        """What a failing (or reported) check says: metric, both values, tolerance and the rule."""
        where = f"[config {self.config}, test {self.test_key}" + (f", runner {self.runner}]" if self.runner else "]")
        if self.status == "not comparable":
            return f"{self.metric}: {fmt(self.observed)} not comparable: {self.rule} {where}"
        if self.status == "learning":
            return f"{self.metric}: {fmt(self.observed)} learning its spread: {self.rule} {where}"
        if self.baseline is None:
            return f"{self.metric}: {fmt(self.observed)} has no baseline ({self.rule}) {where}"
        head = {
            "REGRESSED": "REGRESSED",
            "improved": "improved — consider --update-baselines",
            "pass": "within noise",
        }[self.status]
        pct = "" if self.delta_pct is None else f", {self.delta_pct:+.1f}%"
        if self.p_value is not None:
            pct += f"; p={fmt_p(self.p_value)}" + ("" if self.q_value is None else f", q={fmt_p(self.q_value)}")
        worse = "lower" if self.direction == "higher" else "higher"
        return (
            f"{self.metric} {head}: observed {fmt(self.observed)} vs baseline {fmt(self.baseline)} "
            f"(delta {fmt(self.delta, sign=True)}{pct}; tolerance {fmt(self.tolerance)}, {self.direction} is "
            f"better, so {worse} beyond the tolerance fails) — rule: {self.rule} {where}"
        )


def fmt(x: float | None, *, sign: bool = False, digits: int = 4) -> str:
    """Numbers as people read them in a table: 4 significant digits, no float noise."""
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    spec = "+" if sign else ""
    if abs(x) >= 10**digits:
        return f"{x:{spec}.0f}"
    return f"{x:{spec}.{digits}g}"


def fmt_p(p: float | None) -> str:
    """p-values as people compare them with a threshold: 2 significant digits, '<1e-6' at the floor."""
    if p is None:
        return "-"
    return "<1e-6" if p < 1e-6 else f"{p:.2g}"


def judge(baseline: float, observed: float, tolerance: float, direction: Direction) -> Status:
    """One-sided by direction: worse beyond the tolerance regresses, better beyond it improves."""
    worse_by = baseline - observed if direction == "higher" else observed - baseline
    if worse_by > tolerance:
        return "REGRESSED"
    if -worse_by > tolerance:
        return "improved"
    return "pass"


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
