"""The session verdict: one state for a whole run, computed once from its records.

Every place that says how a run went — the terminal's last llmbench line, summary.md's first line, the
report.html banner, the JUnit testsuite properties and the exit status — reads :func:`session_verdict`,
so none of them can be green while a table below it is red. "Nothing was judged" and "inconclusive"
are states of their own, never shown as a pass.

Each kind of result is read by one function of :data:`READERS` (records in, :class:`Finding` s out):
stored-baseline verdicts, comparisons (with the suite-level Holm step of ``comparison_budget``), and
the test outcomes of the ``session`` record. A new kind of result (bisect, history) is one more reader.
Pure: plain records in, a frozen value out; nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

Record = Mapping[str, Any]


class State(Enum):
    """Worst first: the run's state is the worst state any finding has."""

    REGRESSED = "regressed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"
    PASSED = "passed"
    NOTHING_JUDGED = "nothing judged"

    @property
    def rank(self) -> int:
        return list(State).index(self)


#: How each state is shown: the headline word, summary.md's mark, the banner's colour class.
LABEL = {
    State.REGRESSED: ("REGRESSED", "❌", "bad"),
    State.FAILED: ("FAILED", "❌", "bad"),
    State.INCONCLUSIVE: ("INCONCLUSIVE", "⚠️", "warn"),
    State.PASSED: ("PASSED", "✅", "good"),
    State.NOTHING_JUDGED: ("NOTHING JUDGED", "⚪", "neutral"),
}


@dataclass(frozen=True)
class Finding:
    """One reader's statement about the run: ``what`` (e.g. "2 comparisons regressed") makes it ``state``."""

    state: State
    what: str
    #: tests whose failure this finding explains (a regressed check fails its test: not a second failure)
    nodeids: frozenset[str] = frozenset()
    #: this finding alone makes the exit status non-zero (inconclusive under --llmbench-strict)
    fails: bool = False
    improved: int = 0


@dataclass(frozen=True)
class SessionVerdict:
    state: State
    findings: tuple[Finding, ...]
    exit_status: int

    @property
    def label(self) -> str:
        return LABEL[self.state][0]

    @property
    def mark(self) -> str:
        return LABEL[self.state][1]

    @property
    def tone(self) -> str:
        """The banner's CSS class: bad, warn, good, neutral."""
        return LABEL[self.state][2]

    @property
    def improved(self) -> int:
        return sum(f.improved for f in self.findings)

    @property
    def detail(self) -> str:
        """What made the state, worst first: ``2 comparisons regressed; 1 check pass``."""
        ordered = sorted(self.findings, key=lambda f: f.state.rank)
        return "; ".join(f.what for f in ordered) or "no checks, comparisons or tests recorded"

    def line(self) -> str:
        """The one line every surface shows (the terminal, summary.md, the banner, JUnit)."""
        return f"llmbench: {self.label} — {self.detail} (exit status {self.exit_status})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _passed(items: Sequence[Record], noun: str, how: str, improved: int) -> Finding:
    return Finding(
        State.PASSED,
        f"{_plural(len(items), noun)} {how}" + (f" ({improved} improved)" if improved else ""),
        improved=improved,
    )


def _nodeids(records: Iterable[Record]) -> frozenset[str]:
    return frozenset(str(r["nodeid"]) for r in records if r.get("nodeid"))


# --- readers: one per kind of result ------------------------------------------------------------------


def stored_findings(records: Sequence[Record]) -> list[Finding]:
    """Stored-baseline verdicts (``verdict`` records, written at session end after Holm; a session that
    never reached its end has only the ``check`` records written as each check ran)."""
    verdicts = [r for r in records if r.get("record") == "verdict"] or [
        r for r in records if r.get("record") == "check"
    ]
    recorded = [v for v in verdicts if v.get("recorded")]
    live = [v for v in verdicts if not v.get("recorded")]
    out = []
    regressed = [v for v in live if v.get("status") == "REGRESSED"]
    if regressed:
        suite = sum("at suite level" in str(v.get("rule") or "") for v in regressed)
        out.append(
            Finding(
                State.REGRESSED,
                f"{_plural(len(regressed), 'check')} REGRESSED" + (f" ({suite} at suite level)" if suite else ""),
                _nodeids(regressed),
            )
        )
    judged = [v for v in live if v.get("status") in ("pass", "improved")]
    if judged:
        out.append(_passed(judged, "check", "within baseline", sum(v.get("status") == "improved" for v in judged)))
    rest = [v for v in live if v.get("status") not in ("REGRESSED", "pass", "improved")]
    if rest:
        kinds: dict[str, int] = {}
        for v in rest:
            kinds[str(v.get("status"))] = kinds.get(str(v.get("status")), 0) + 1
        out.append(
            Finding(
                State.NOTHING_JUDGED,
                f"{_plural(len(rest), 'check')} not judged (" + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ")",
            )
        )
    if recorded:
        bad = sum(v.get("status") == "REGRESSED" for v in recorded)
        out.append(
            Finding(
                State.NOTHING_JUDGED,
                f"{_plural(len(recorded), 'value')} recorded, not judged (--update-baselines=all"
                + (f"; {bad} would have REGRESSED" if bad else "")
                + ")",
            )
        )
    return out


def comparisons(records: Sequence[Record]) -> list[dict[str, Any]]:
    """The ``comparison`` records with the suite step's ``q_value`` and ``suite_verdict`` on each: from the
    session's ``comparison_suite`` records (compare/suite.py), else the record's own, else the older
    ``comparison_budget`` records (session end)."""

    q_by: dict[tuple[str, str], Any] = {}
    suite: set[tuple[str, str]] = set()
    for budget in (r for r in records if r.get("record") == "comparison_budget"):  # one per shard when merged
        q_by.update(
            {(str(q.get("nodeid")), str(q.get("metric"))): q.get("q_value") for q in budget.get("q_values") or []}
        )
        suite |= {(str(s.get("nodeid")), str(s.get("metric"))) for s in budget.get("suite_regressed") or []}
    out = []
    for c in joined(records):
        key = (str(c.get("nodeid")), str(c.get("metric")))
        if c.get("q_value") is None and key in q_by:
            c["q_value"] = q_by[key]
        if not c.get("suite_verdict") and key in suite:
            c["suite_verdict"] = "regressed"
        out.append(c)
    return out


def comparison_findings(records: Sequence[Record]) -> list[Finding]:
    """Reference vs candidate: regressed (at its own level or by Holm at suite level), inconclusive
    (underpowered noted; a failure under --llmbench-strict), equivalent, improved."""
    comps = comparisons(records)
    out = []
    regressed = [c for c in comps if c.get("verdict") == "regressed" or c.get("suite_verdict") == "regressed"]
    if regressed:
        suite = sum(c.get("verdict") != "regressed" for c in regressed)
        out.append(
            Finding(
                State.REGRESSED,
                f"{_plural(len(regressed), 'comparison')} regressed" + (f" ({suite} at suite level)" if suite else ""),
                _nodeids(regressed),
            )
        )
    unclear = [c for c in comps if c.get("verdict") == "inconclusive" and c not in regressed]
    if unclear:
        weak = sum(bool(c.get("underpowered")) for c in unclear)
        strict = [c for c in unclear if c.get("strict")]
        out.append(
            Finding(
                State.INCONCLUSIVE,
                f"{_plural(len(unclear), 'comparison')} inconclusive"
                + (f" ({weak} underpowered)" if weak else "")
                + (" — a failure under --llmbench-strict" if strict else ""),
                _nodeids(strict),
                fails=bool(strict),
            )
        )
    fine = [c for c in comps if c.get("verdict") in ("equivalent", "improved") and c not in regressed]
    if fine:
        out.append(
            _passed(fine, "comparison", "equivalent or better", sum(c.get("verdict") == "improved" for c in fine))
        )
    return out


#: pytest exit statuses that end a run before its verdicts: the run FAILED, with pytest's own status.
ABORTED = {2: "interrupted", 3: "internal error", 4: "usage error", 143: "terminated (SIGTERM)"}


def outcome_findings(records: Sequence[Record]) -> list[Finding]:
    """Test outcomes from the ``session`` records (failed or errored tests, an aborted run; a folder merged
    from shards holds one per shard, and every one counts) and errors outside any test (``session_error``
    records: a baseline file that could not be written). Failures another finding explains (a test
    failed by its own regressed check) are left to that finding."""
    sessions = [r for r in records if r.get("record") == "session"]
    out = []
    failed = {str(n): None for s in sessions for n in s.get("failed") or []}
    if failed:
        out.append(Finding(State.FAILED, "", frozenset(failed)))  # named once the explained ones are known
    passed = sum(int((s.get("tests") or {}).get("passed") or 0) for s in sessions)
    if passed:
        out.append(Finding(State.NOTHING_JUDGED, f"{_plural(passed, 'test')} passed"))
    for problem in (p for s in sessions for p in s.get("problems") or []):
        out.append(Finding(State.FAILED, str(problem)))
    for err in (r for r in records if r.get("record") == "session_error"):
        out.append(Finding(State.FAILED, f"{err.get('source') or 'error'}: {err.get('message')}"))
    status = _aborted(sessions)
    if status is not None:
        out.append(Finding(State.FAILED, f"pytest {ABORTED[status]}"))  # the line ends with the exit status
    return out


def _aborted(sessions: Sequence[Record]) -> int | None:
    """pytest's own status of a session that ended early (interrupted, internal or usage error), if any."""
    return next((int(s["pytest_exit_status"]) for s in sessions if s.get("pytest_exit_status") in ABORTED), None)


#: Every reader; the session verdict is what all of them found. Bisect and history add theirs here.
#: What a bisect's end (bisect/search.py) makes of the run: a build found to be the first slower one (or a
#: range narrowed to builds that were skipped) is the regression confirmed; "unknown" is inconclusive; a
#: regression that the ends did not reproduce passes; an end that cannot run failed.
BISECT_STATE = {
    "culprit": State.REGRESSED,
    "range": State.REGRESSED,
    "unknown": State.INCONCLUSIVE,
    "not-reproduced": State.PASSED,
    "broken-end": State.FAILED,
}


#: the bisect statuses its command exits 0 on (cli/bisect.py): the search found what it was asked for
BISECT_FOUND = ("culprit", "range")


@dataclass(frozen=True)
class BisectSoFar:
    """What an interrupted bisect had learnt (``bisect_step`` lines, no ``bisect`` line: the machine went, a
    Ctrl-C, the runner's timeout): its steps walked as bisect/search.py walks them, so the report shows the
    range a ``--resume`` would go on from instead of "nothing judged"."""

    steps: tuple[Record, ...]
    good: str
    bad: str
    ends: str | None  # the ends' last outcome; a range exists only when it is "different"
    last_good: str
    first_bad: str
    last_good_index: int | None
    first_bad_index: int | None
    confirm: str | None  # the confirmation's outcome, when it ran

    @property
    def last_step(self) -> int:
        return max(int(s.get("step") or 0) for s in self.steps)

    @property
    def has_range(self) -> bool:
        return self.ends == "different"

    @property
    def so_far(self) -> str:
        """The range so far, or why there is none: "the first slower build is after X, up to Y"."""
        if self.ends is None:
            return "no range yet: the ends have no outcome"
        if self.ends == "same":
            return f"no range: the ends did not reproduce the slowdown ({self.good} → {self.bad}: same)"
        if not self.has_range:
            return f"no range yet: the ends ({self.good} → {self.bad}) came out {self.ends}"
        lo, hi = self.last_good_index, self.first_bad_index
        neighbours = isinstance(lo, int) and isinstance(hi, int) and hi - lo == 1
        if neighbours:
            found = f"so far the first slower build is {self.first_bad} (right after {self.last_good})"
        else:
            found = f"so far the first slower build is after {self.last_good}, up to {self.first_bad}"
        if self.confirm:
            return f"{found}, confirmation: {self.confirm}"
        return f"{found}, not confirmed yet" if neighbours else found

    @property
    def message(self) -> str:
        return (
            f"interrupted after step {self.last_step} (no finding recorded): {self.so_far}; "
            "go on with `bisect --resume` on this folder"
        )


def bisect_so_far(records: Sequence[Record]) -> BisectSoFar | None:
    """The interrupted bisect of these records, or None (no steps, or a ``bisect`` line: the bisect ended).

    A run resumed into the same folder numbers its steps from 1 again: its lines, from the last step 1, count.
    """
    if any(r.get("record") == "bisect" for r in records):
        return None
    steps = [r for r in records if r.get("record") == "bisect_step"]
    if not steps:
        return None
    starts = [i for i, s in enumerate(steps) if s.get("step") == 1]
    steps = steps[starts[-1] :] if starts else steps
    ends = [s for s in steps if s.get("kind") == "ends"]
    first = (ends or steps)[0]
    good, bad = str(first.get("reference")), str(first.get("candidate"))
    lo, hi = (good, first.get("reference_index")), (bad, first.get("candidate_index"))
    confirm = None
    for s in steps:
        moved_to = (str(s.get("candidate")), s.get("candidate_index"))
        if s.get("kind") == "bisect" and s.get("outcome") == "different":
            hi = moved_to
        elif s.get("kind") == "bisect" and s.get("outcome") == "same":
            lo = moved_to
        elif s.get("kind") == "confirm":
            confirm = str(s.get("outcome"))
    return BisectSoFar(
        tuple(steps),
        good,
        bad,
        str(ends[-1].get("outcome")) if ends else None,
        lo[0],
        hi[0],
        lo[1] if isinstance(lo[1], int) else None,
        hi[1] if isinstance(hi[1], int) else None,
        confirm,
    )


def bisect_findings(records: Sequence[Record]) -> list[Finding]:
    """The bisect's finding (its last ``bisect`` record): "bisect: first slower build is X" and the like; an
    interrupted bisect's (step lines only) is inconclusive, with the range it had narrowed to."""
    found = [r for r in records if r.get("record") == "bisect"]
    if not found:
        so_far = bisect_so_far(records)
        return [Finding(State.INCONCLUSIVE, f"bisect: {so_far.message}")] if so_far else []
    last = found[-1]
    state = BISECT_STATE.get(str(last.get("status")), State.INCONCLUSIVE)
    return [Finding(state, f"bisect: {last.get('message') or last.get('status')}", fails=state is State.FAILED)]


READERS: list[Callable[[Sequence[Record]], list[Finding]]] = [
    stored_findings,
    comparison_findings,
    outcome_findings,
    bisect_findings,
]


def session_verdict(records: Iterable[Record]) -> SessionVerdict:
    """The run's one verdict from all its records (any order; a merged folder's every session counts)."""
    recs = list(records)
    found: list[Finding] = []
    for reader in READERS:
        found.extend(reader(recs))
    explained: set[str] = set()
    for f in found:
        if f.what:
            explained |= f.nodeids
    findings = []
    for f in found:
        if f.state is State.FAILED and not f.what:  # the test-failure placeholder
            rest = sorted(f.nodeids - explained)
            if not rest:
                continue
            f = Finding(State.FAILED, f"{_plural(len(rest), 'test')} failed ({_short(rest)})", frozenset(rest))
        findings.append(f)
    state = min((f.state for f in findings), key=lambda s: s.rank, default=State.NOTHING_JUDGED)
    return SessionVerdict(state, tuple(findings), _exit_status(state, findings, recs))


def _short(nodeids: Sequence[str], shown: int = 3) -> str:
    return ", ".join(nodeids[:shown]) + (f" and {len(nodeids) - shown} more" if len(nodeids) > shown else "")


def _exit_status(state: State, findings: Sequence[Finding], records: Sequence[Record]) -> int:
    """1 when the run regressed or failed (or an inconclusive comparison under --llmbench-strict); an
    aborted run keeps pytest's own status; no tests at all keeps 5; else 0. A bisect's folder has the
    bisect command's status (``git bisect run``'s sense): 0 when it named a culprit or range, else 1 (an
    interrupted one, with step lines only, included)."""
    bisects = [r for r in records if r.get("record") == "bisect"]
    if bisects:
        return 0 if bisects[-1].get("status") in BISECT_FOUND else 1
    if any(r.get("record") == "bisect_step" for r in records):
        return 1  # an interrupted bisect: it found nothing (yet)
    sessions = [r for r in records if r.get("record") == "session"]
    aborted = _aborted(sessions)
    if aborted is not None:
        return aborted
    if state in (State.REGRESSED, State.FAILED) or any(f.fails for f in findings):
        return 1
    return 5 if sessions and all(s.get("pytest_exit_status") == 5 for s in sessions) else 0


# --- the comparison records with the suite level's Holm step joined on (compare/suite.py writes it) ---


def _key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    return (r.get("compare_session"), r.get("nodeid"), r.get("scenario"), r.get("metric"))


def joined(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``comparison`` records among ``records`` with ``q_value`` and ``suite_verdict`` from the latest
    ``comparison_suite`` record of the same session, test, scenario and metric (a comparison without one:
    the session ended before Holm ran, and it keeps what it had)."""
    latest = {_key(r): r for r in records if r.get("record") == "comparison_suite"}
    out = []
    for r in records:
        if r.get("record") != "comparison":
            continue
        extra = latest.get(_key(r))
        row = dict(r)
        if extra is not None:
            row["q_value"] = extra.get("q_value")
            row["suite_verdict"] = extra.get("suite_verdict")
        out.append(row)
    return out
