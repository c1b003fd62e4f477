"""Series → findings: each change point with the nights and builds on either side of it.

A finding is what a nightly job acts on: is it worse (by the metric's direction), is it new, and what would
a bisect take as good and bad (the builds of the last night before and the first night after). When the
build is the same on both sides but the server arguments differ, the change is in the setup and a bisect
over builds would find nothing.

"New" means first reported: not in the report made before the last K nights (:func:`history_report`). The
detector needs nights on both sides of a split, so a change is reported a night or more after its first
night; "its first night is among the last K" could never hold for K = 1 (issue 56). The last night is also
tested on its own (:func:`~pytest_llmbench.history.changepoints.last_point`), so a step the night it happens
can fail the gate. False change points are controlled per family of series as the gate's alpha is (timing,
quality, decisions: gate/judge.py): each series of a family of m is searched at ``max_p / m``
(the false rate per report over many series is not simulated yet: issue 56).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_llmbench.gate.judge import family_of
from pytest_llmbench.gate.metric import default_hardware_bound
from pytest_llmbench.history.changepoints import DEFAULT_MAX_P, DEFAULT_WINDOW, ChangePoint, edivisive, last_point
from pytest_llmbench.history.series import NOT_COMPARABLE, Night, Point, Series, SeriesKey

#: fewer nights than this and no change point is looked for (each side needs a few nights)
MIN_NIGHTS = 6


#: weight a ratio series' nights by their comparisons' 1/SE² (experiments/history/simulate_history_designs.out.md)
WEIGHTED = False
#: a change point reported earlier is the same one reported now when it is of the same series and direction
#: and its first night after lies within this many nights (a split can move as nights are added)
MATCH_NIGHTS = 3


@dataclass(frozen=True)
class Finding:
    """A change point of ``series``; ``change.index`` is the first night after it and ``before_index`` the
    last judged night before it (nights the gate called not comparable lie between them or nowhere)."""

    series: Series
    change: ChangePoint
    before_index: int

    @property
    def first_after(self) -> Point:
        return self.series.points[self.change.index]

    @property
    def last_before(self) -> Point:
        return self.series.points[self.before_index]

    @property
    def worse(self) -> bool:
        lower = self.change.ratio < 1.0
        return lower if self.series.direction == "higher" else not lower

    @property
    def provisional(self) -> bool:
        """Found by the last-night test alone: one night after it; the next night confirms or drops it."""
        return self.change.n_after == 1

    @property
    def good_build(self) -> str:
        return self.last_before.build

    @property
    def bad_build(self) -> str:
        return self.first_after.build

    @property
    def setup_changed(self) -> bool:
        return self.last_before.setup != self.first_after.setup

    @property
    def setup_change(self) -> str:
        """The server arguments that differ across the change, each with its flag: ``-t 2 → -t 1``."""
        return args_diff(self.last_before.setup.split(), self.first_after.setup.split())

    def as_record(self) -> dict[str, Any]:
        c, k = self.change, self.series.key
        return {
            "record": "change_point",
            "runner": k.runner,
            "config": k.config,
            "test_key": k.test,
            "metric": k.metric,
            "kind": k.kind,
            "reference": self.first_after.reference,
            "direction": self.series.direction,
            "worse": self.worse,
            "first_night": self.first_after.night,
            "last_night_before": self.last_before.night,
            "before": c.before,
            "after": c.after,
            "ratio": c.ratio,
            "ci_low": c.ratio_low,
            "ci_high": c.ratio_high,
            "p_value": c.p,
            "good_build": self.good_build,
            "bad_build": self.bad_build,
            "setup_before": self.last_before.setup,
            "setup_after": self.first_after.setup,
            "setup_change": self.setup_change,
            "nights_after": c.n_after,
            "family": family(k),
        }


def args_diff(before: list[str], after: list[str]) -> str:
    """Only the differing arguments (a changed value keeps the flag in front of it); "" when equal."""
    olds, news = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        flag = i1 > 0 and j1 > 0 and before[i1 - 1] == after[j1 - 1] and before[i1 - 1].startswith("-")
        olds += before[i1 - 1 if flag else i1 : i2]
        news += after[j1 - 1 if flag else j1 : j2]
    return f"{' '.join(olds) or '(none)'} → {' '.join(news) or '(none)'}" if olds or news else ""


def repinned(series: Series) -> list[int]:
    """Nights whose reference build differs from the night before: a ratio series' level is relative to its
    reference, so each re-pin starts a new segment (drawn, never a change point)."""
    pts = series.points
    return [i for i in range(1, len(pts)) if pts[i].reference != pts[i - 1].reference]


def segments(series: Series) -> list[list[int]]:
    """The judged nights of each stretch with one reference (one stretch for a value series). A night the
    gate marked not comparable (another process used the cores) is left out: its value measures the
    neighbours, not the build."""
    out: list[list[int]] = []
    for i, p in enumerate(series.points):
        if i == 0 or p.reference != series.points[i - 1].reference:
            out.append([])
        if p.status != NOT_COMPARABLE:
            out[-1].append(i)
    return [s for s in out if s]


def family(key: SeriesKey) -> str:
    """The series' error-budget family, as the gate's (gate/judge.py): timing, quality or decisions."""
    return family_of(key.test, default_hardware_bound(key.metric))


def judged_nights(series: Series) -> int:
    """Judged nights in the series' current stretch (since its last re-pin): what the detector has to go on."""
    segs = segments(series)
    return len(segs[-1]) if segs else 0


def family_sizes(series: Sequence[Series]) -> dict[str, int]:
    """How many series of each family the detector can judge (a stretch of ≥ ``MIN_NIGHTS`` nights)."""
    out: dict[str, int] = {}
    for s in series:
        if any(len(seg) >= MIN_NIGHTS for seg in segments(s)):
            out[family(s.key)] = out.get(family(s.key), 0) + 1
    return out


def find_changes(
    series: Sequence[Series],
    *,
    max_p: float = DEFAULT_MAX_P,
    min_magnitude: float = 0.0,
    window: int = DEFAULT_WINDOW,
    weighted: bool = WEIGHTED,
    per_family: bool = True,
    last_night: bool = True,
) -> list[Finding]:
    """Every series' change points (E-divisive + t-test) over the nights its gate could judge, within each
    stretch of one reference build.

    ``per_family``: ``max_p`` is each family's; a series of a family of m is searched at ``max_p / m``
    (Bonferroni). ``last_night``: the last night of each series is also tested against the nights since its
    last change point (a :attr:`Finding.provisional` finding). ``weighted``: a ratio series whose every
    point has an SE weights its nights by 1/SE² (a night the host made noisy counts less). A series with a
    value ≤ 0 (a count of failures, a zero-error metric) is skipped: a ratio scale has no room for zero.
    """
    sizes = family_sizes(series) if per_family else {}
    out = []
    for s in series:
        p = max_p / max(sizes.get(family(s.key), 1), 1)
        segs = segments(s)
        for judged in segs:
            values = [s.points[i].value for i in judged]
            if len(values) < MIN_NIGHTS or any(v <= 0 for v in values):
                continue
            ses = [s.points[i].se for i in judged]
            weights = [1.0 / se**2 for se in ses if se] if weighted else []
            found = edivisive(
                values,
                max_p=p,
                min_magnitude=min_magnitude,
                window=window,
                weights=weights if len(weights) == len(values) else None,
            )
            for cp in found:
                out.append(Finding(s, replace(cp, index=judged[cp.index]), judged[cp.index - 1]))
            if last_night and judged is segs[-1] and judged[-1] == len(s.points) - 1:
                since = found[-1].index if found else 0
                tail = last_point(values[since:], max_p=p, min_before=MIN_NIGHTS - 1)
                if tail is not None and abs(math.log(tail.ratio)) >= math.log1p(min_magnitude):
                    out.append(Finding(s, replace(tail, index=judged[-1]), judged[-2]))
    return out


def earlier_series(series: Sequence[Series], nights: Sequence[Night], last: int) -> list[Series]:
    """The series as they stood before the last ``last`` nights (what the previous report saw)."""
    recent = {n.name for n in nights[-last:]} if last > 0 else set()
    return [Series(s.key, s.direction, [p for p in s.points if p.night not in recent]) for s in series]


def same_change(a: Finding, b: Finding) -> bool:
    return a.series.key == b.series.key and a.worse == b.worse and abs(a.change.index - b.change.index) <= MATCH_NIGHTS


def first_reported(findings: Sequence[Finding], earlier: Sequence[Finding]) -> list[Finding]:
    """Findings that no finding of the ``earlier`` report already held (:func:`same_change`)."""
    return [f for f in findings if not any(same_change(f, e) for e in earlier)]


@dataclass(frozen=True)
class Report:
    """What ``history`` says over some nights: every finding, the new ones, and what the detector could judge."""

    findings: list[Finding]
    new: list[Finding]
    #: series per family and the family's max_p (each series at max_p / its family's size)
    families: dict[str, int]
    max_p: float
    last: int

    @property
    def new_worse(self) -> list[Finding]:
        return [f for f in self.new if f.worse]


def history_report(
    series: Sequence[Series],
    nights: Sequence[Night],
    *,
    last: int = 1,
    max_p: float = DEFAULT_MAX_P,
    min_magnitude: float = 0.0,
    window: int = DEFAULT_WINDOW,
    weighted: bool = WEIGHTED,
    per_family: bool = True,
) -> Report:
    """Change points over all nights, and which of them are new: first reported in the last ``last`` nights
    (absent from the same analysis over the nights before them). ``last`` must be ≥ 1."""
    if last < 1:
        raise ValueError(f"last must be >= 1 night, got {last}")
    kw: dict[str, Any] = {
        "max_p": max_p,
        "min_magnitude": min_magnitude,
        "window": window,
        "weighted": weighted,
        "per_family": per_family,
    }
    findings = find_changes(series, **kw)
    earlier = find_changes(earlier_series(series, nights, last), **kw)
    sizes = family_sizes(series) if per_family else {}
    return Report(findings, first_reported(findings, earlier), sizes, max_p, last)


def waiting(series: Sequence[Series]) -> list[tuple[Series, int]]:
    """Series the detector cannot judge yet: fewer than ``MIN_NIGHTS`` judged nights since their last re-pin,
    each with how many it has."""
    return [(s, k) for s in series if (k := judged_nights(s)) < MIN_NIGHTS]


#: the per-night SD at which a 3% step is found by its 5th night in >= 90% of series with <= 5% false change
#: points (E-divisive default: 93% at 1.0%, 79% at 1.25%; experiments/history/simulate_history_designs.out.md)
RESOLVES_3PCT_SD = 0.01


def night_sd(series: Series, findings: Sequence[Finding]) -> float | None:
    """The series' night-to-night SD on the log scale: pooled within the stretches between its change points
    and re-pins, over judged nights. What decides which steps the nights can show (docs/HISTORY.md)."""
    cuts = {f.change.index for f in findings if f.series is series}
    ss, df = 0.0, 0
    for seg in segments(series):
        pieces: list[list[float]] = [[]]
        for i in seg:
            if i in cuts and pieces[-1]:
                pieces.append([])
            if series.points[i].value > 0:
                pieces[-1].append(math.log(series.points[i].value))
        for piece in pieces:
            if len(piece) >= 2:
                mean = sum(piece) / len(piece)
                ss += sum((v - mean) ** 2 for v in piece)
                df += len(piece) - 1
    return math.sqrt(ss / df) if df >= 2 else None


def new_findings(
    findings: Sequence[Finding], nights: Sequence[Night], last: int, earlier: Sequence[Finding] | None = None
) -> list[Finding]:
    """With ``earlier`` (the findings over the nights before the last ``last``): the findings first reported
    since, as :func:`history_report` says. Without: those whose first night after the change is one of the
    ``last`` most recent nights, which misses every change the detector reports a night or more late; the
    nightly gate uses :func:`history_report`."""
    if earlier is not None:
        return first_reported(findings, earlier)
    recent = {n.name for n in nights[-last:]} if last > 0 else set()
    return [f for f in findings if f.first_after.night in recent]
