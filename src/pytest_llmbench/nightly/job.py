"""The nightly job: tonight's build against the pinned reference → a night in the store → the nights
together → when tonight is worse, the culprit. Each stage is an existing command, run as a user would:

1. the in-session comparison (a pytest session, reference and candidate arms, ``--llmbench-compare-budget``);
2. the night appended to the store (store.py: one immutable folder, ``night.json`` last);
3. ``history`` over every stored night (change points, history.md, the trend page);
4. when tonight REGRESSED or a new change point is for the worse, and no earlier night already started a
   bisect for the same regression: ``bisect`` over the pinned builds between the last good night's candidate
   and tonight's, within its own budget; its folder goes to the store beside the night;
5. one headline, which is also the exit status: PASSED; REGRESSED at night X — culprit Y (or "unknown between
   Y and Z"); FAILED when tonight's session could not judge (a broken build).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_llmbench import interrupts, redact
from pytest_llmbench.nightly.candidates import Candidate, CandidateError, between, parse_spec, resolve_pin
from pytest_llmbench.nightly.store import Store, StoredNight, new_id
from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.records.verdict import session_verdict

#: what of a session's results folder the store keeps: the records and the summary (server logs and the
#: report stay in the job's --out, the CI artifact; a store grows by every night)
KEPT = ("results*.jsonl", "summary.md")
PASSED, REGRESSED, FAILED, INCONCLUSIVE = "PASSED", "REGRESSED", "FAILED", "INCONCLUSIVE"
REGRESSION_FILE = "regression.json"  # in the store's bisects/<night id>/: what owns a regression


@dataclass
class JobSettings:
    reference: str
    candidate: str
    pytest_args: list[str]
    out: Path
    budget: str = "40m"  # the comparison session's --llmbench-compare-budget
    bisect_budget_s: float | None = 3600.0  # None: no bisect
    step_budget_s: float | None = None  # each bisect step's --compare-budget per scenario (bisect's default)
    candidates_from: str | None = None
    night_label: str | None = None
    python: str = sys.executable
    command: str = ""
    hook: Callable[[], Sequence[str] | None] | None = None


@dataclass
class JobResult:
    state: str
    headline: str
    exit_status: int
    night_id: str = ""
    lines: list[str] = field(default_factory=list)


def _copy_kept(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for pattern in KEPT:
        for f in src.glob(pattern):
            (dest / f.name).write_bytes(f.read_bytes())


def run_logged(cmd: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> int:
    """Run ``cmd``, its output both to the terminal (a CI log) and to ``log``. Interrupted, the session is
    let finish its own end (its servers stopped, its summary written; SIGTERM is passed on to it), its output
    still read, and then the interrupt goes on to the caller."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as sink:
        sink.write("$ " + redact.scrub(shlex.join(cmd)) + "\n")
        proc = subprocess.Popen(
            list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(env or os.environ)
        )
        assert proc.stdout is not None
        try:
            _copy_lines(proc.stdout, sink)
        except BaseException as e:
            interrupts.forward(proc, e)
            try:
                _copy_lines(proc.stdout, sink)  # the session's end: a full pipe would stall it
            finally:
                if proc.poll() is None:  # a third Ctrl-C gave up on the orderly end
                    proc.kill()
                proc.wait()
            raise
        proc.wait()
    return proc.returncode


def _copy_lines(lines: Iterable[str], sink: Any) -> None:
    for line in lines:
        sink.write(line)
        sys.stdout.write(line)
        sys.stdout.flush()


class NightlyJob:
    """One night, from the pins to the headline (see the module doc)."""

    def __init__(self, settings: JobSettings, store: Store, say: Callable[[str], None] | None = None):
        self.s = settings
        self.store = store
        self.say = say or (lambda line: print(line, flush=True))
        self.out = settings.out
        self.stored_night = ""  # the night's id once it is in the store (an interrupt after it keeps the night)

    def interrupted(self, error: BaseException) -> JobResult:
        """The headline of a night stopped by Ctrl-C or SIGTERM: nothing half-judged goes to the store. Stopped
        in its comparison, the night is not stored (the next night compares again); stopped in its bisect, the
        night is stored without a finding, so the next night that regresses bisects again."""
        how = "SIGTERM" if isinstance(error, interrupts.Terminated) else "Ctrl-C"
        if not self.stored_night:
            what = f"the night was not stored; its session's results are in {self.out / 'night'}"
        else:
            what = (
                f"night {self.stored_night} stored, its bisect not finished (steps in {self.out / 'bisect'}; the "
                f"next regressed night bisects again)"
            )
        result = JobResult("INTERRUPTED", f"INTERRUPTED ({how}) — {what}", interrupts.exit_status(error))
        result.night_id = self.stored_night
        self._write_summary(result)
        return result

    # --- 0. the builds, pinned --------------------------------------------------------------------
    def pinned(self, spec: str) -> Candidate:
        c = parse_spec(spec)
        now = resolve_pin(c)
        rec = self.store.pin(c.tag, now, c.kind)
        if rec.get("pinned") != now:
            self.say(
                f"nightly: {c.tag} is pinned to {rec.get('pinned')} (first seen {rec.get('first_seen')}); "
                f"the tag now names {now}: the pin runs"
            )
        return Candidate(c.tag, c.kind, str(rec.get("pinned") or now))

    # --- 1. tonight's comparison ------------------------------------------------------------------
    def compare(self, reference: Candidate, candidate: Candidate) -> tuple[int, Path]:
        folder = self.out / "night"
        if any(folder.glob("results*.jsonl")):
            raise CandidateError(f"--out {self.out}: already holds a night's results; give a new folder")
        if reference.kind != candidate.kind:
            raise CandidateError(
                f"--reference {reference.tag} ({reference.kind}) and --candidate {candidate.tag} ({candidate.kind}): "
                f"both images or both binary folders"
            )
        arms = [*reference.arm("reference"), *candidate.arm("candidate")]
        if candidate.kind == "image":
            arms.append("--no-pull")  # pinned above: the session runs exactly what was recorded
        cmd = [
            self.s.python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rfE",
            *self.s.pytest_args,
            *arms,
            "--llmbench-compare-budget",
            self.s.budget,
            "--results-dir",
            str(folder),
        ]
        self.say(f"nightly: comparing {candidate.label} with {reference.label} (budget {self.s.budget})")
        return run_logged(cmd, self.out / "session.log"), folder

    # --- 3. the nights together -------------------------------------------------------------------
    def history(self) -> tuple[int, list[dict[str, Any]]]:
        from pytest_llmbench.cli import history as history_cli

        folders = self.store.fetch_nights(self.out / "store-nights")
        out = self.out / "history"
        argv = [*map(str, folders), "--out", str(out), "--last", "1", "--fail-on-new", "--no-step-summary"]
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            code = int(history_cli.main(argv) or 0)
        (self.out / "history.log").write_text(text.getvalue(), encoding="utf-8")
        found = []
        if (out / "change_points.jsonl").is_file():
            for line in (out / "change_points.jsonl").read_text(encoding="utf-8").splitlines():
                if line.strip():
                    found.append(json.loads(line))
        return code, found

    # --- 4. the culprit ---------------------------------------------------------------------------
    def candidates_between(self, good: Candidate, bad: Candidate) -> list[Candidate]:
        if not self.s.candidates_from:
            return []
        from pytest_llmbench.nightly.candidates import list_candidates

        specs = list_candidates(self.s.candidates_from, self.s.hook)
        tags = [parse_spec(s).tag for s in specs]
        out = []
        for tag in between(tags, good.tag, bad.tag):
            try:
                out.append(self.pinned(tag))
            except CandidateError as e:  # a tag gone from the registry: left out, and said
                self.say(f"nightly: {tag} left out of the bisect: {e}")
        if not out and good.tag in tags and bad.tag in tags:
            self.say(f"nightly: no candidate between {good.label} and {bad.label} in {self.s.candidates_from}")
        return out

    def bisect(self, good: Candidate, bad: Candidate) -> dict[str, Any]:
        from pytest_llmbench.cli import bisect as bisect_cli

        builds = [good, *self.candidates_between(good, bad), bad]
        folder = self.out / "bisect"
        argv = ["--good", good.label, "--bad", bad.label, "--out", str(folder)]
        if self.s.bisect_budget_s is not None:
            argv += ["--budget", f"{self.s.bisect_budget_s:g}"]
        if self.s.step_budget_s is not None:
            argv += ["--compare-budget", f"{self.s.step_budget_s:g}"]
        argv += ["--", *self.s.pytest_args]
        self.say(f"nightly: bisecting {len(builds)} builds {builds[0].label} … {builds[-1].label}")
        bisect_cli.main(argv, builds=[b.build() for b in builds])
        interrupts.reraise_received()  # bisect kept its steps and returned: the night stops here, unbisected
        recs = of_kind(read_folder(folder).records, "bisect") if folder.is_dir() else []
        return dict(recs[-1]) if recs else {"status": "unknown", "message": "the bisect wrote no result"}

    # --- the whole night --------------------------------------------------------------------------
    def run(self) -> JobResult:
        started = datetime.now(UTC)
        reference = self.pinned(self.s.reference)
        candidate = self.pinned(self.s.candidate)
        label = self.s.night_label or candidate.label
        night_id = new_id(label, started)
        earlier = self.store.nights()

        rc, folder = self.compare(reference, candidate)
        verdict = session_verdict(read_folder(folder).records) if folder.is_dir() else None
        state = verdict.label if verdict is not None else FAILED
        detail = verdict.detail if verdict is not None else f"the session wrote no results (pytest exited {rc})"
        if rc not in (0, 1) and state == PASSED:
            state, detail = FAILED, f"pytest exited {rc}: {detail}"
        meta: dict[str, Any] = {
            "id": night_id,
            "night": label,
            "time": started.isoformat(timespec="seconds"),
            "reference": {"tag": reference.tag, "pinned": reference.pinned, "kind": reference.kind},
            "candidate": {"tag": candidate.tag, "pinned": candidate.pinned, "kind": candidate.kind},
            "state": state,
            "detail": detail,
            "pytest_exit": rc,
            "pytest_args": redact.args(list(self.s.pytest_args)),
            "budget": self.s.budget,
            "command": redact.scrub(self.s.command),
        }
        regression = self._regression(state, reference, earlier)
        stored = self.out / "stored-night"
        _copy_kept(folder, stored)
        if regression:
            meta["regression"] = regression
        self.store.add_night(stored, meta)
        self.stored_night = night_id
        self.say(f"nightly: night {night_id} stored in {self.store.url}: {state} ({detail})")

        code, changes = self.history()
        new_worse = [c for c in changes if c.get("new") and c.get("worse")]
        lines = [f"night {label}: {state} — {detail}"]
        if code == 2:
            lines.append("history: the stored nights could not be read (history.log)")
        for c in new_worse:
            lines.append(
                f"new change point for the worse: {c.get('config')} · {c.get('test_key')} · {c.get('metric')} "
                f"({c.get('kind')}) ×{c.get('ratio', 0):.3f} from night {c.get('first_night')}"
            )
        result = self._verdict(state, meta, regression, new_worse, reference, candidate, earlier, lines)
        result.night_id = night_id
        self._write_summary(result)
        return result

    def _regression(self, state: str, reference: Candidate, earlier: list[StoredNight]) -> dict[str, Any] | None:
        """An earlier night that regressed against the same reference, with nothing passing since, already
        owns tonight's regression (and its bisect): a regression is bisected once, not every night."""
        if state != REGRESSED:
            return None
        for n in reversed(earlier):
            if (n.meta.get("reference") or {}).get("pinned") != reference.pinned:
                continue
            if n.meta.get("state") == PASSED:
                return None
            if n.meta.get("state") == REGRESSED:
                owned = n.meta.get("regression") or self.store.regression(n.id)
                if owned:
                    return dict(owned)
        return None

    def _last_good(self, reference: Candidate, earlier: list[StoredNight]) -> StoredNight | None:
        for n in reversed(earlier):
            if n.meta.get("state") == PASSED and (n.meta.get("reference") or {}).get("pinned") == reference.pinned:
                return n
        return None

    def _verdict(
        self,
        state: str,
        meta: dict[str, Any],
        known: dict[str, Any] | None,
        new_worse: list[dict[str, Any]],
        reference: Candidate,
        candidate: Candidate,
        earlier: list[StoredNight],
        lines: list[str],
    ) -> JobResult:
        label = str(meta["night"])
        if known:
            where = f"night {known.get('night')}"
            return JobResult(REGRESSED, f"REGRESSED at {where} — {known.get('finding')} (known)", 1, lines=lines)
        if state != REGRESSED and not new_worse:  # inconclusive fails where its session failed (--llmbench-strict)
            exit_status = 1 if state == FAILED or (state == INCONCLUSIVE and meta.get("pytest_exit") == 1) else 0
            return JobResult(state, f"{state} — night {label}: {meta['detail']}", exit_status, lines=lines)
        good_night = self._last_good(reference, earlier)
        if new_worse and state != REGRESSED:  # the history saw it first: bisect across its change point
            c = new_worse[0]
            by_id = {n.id: n for n in earlier}
            good_night = by_id.get(str(c.get("last_night_before")), good_night)
            label = next((str(n.meta.get("night")) for n in earlier if n.id == c.get("first_night")), label)
        if good_night is None:
            finding = "not bisected: no earlier night passed against this reference"
        elif self.s.bisect_budget_s is None:
            finding = f"not bisected (--bisect-budget 0): between {good_night.meta.get('night')} and {candidate.label}"
        else:
            g = good_night.meta["candidate"]
            good = Candidate(str(g["tag"]), str(g["kind"]), str(g.get("pinned") or ""))
            record = self.bisect(good, candidate)
            finding = bisect_finding(record)
            lines.append(f"bisect: {record.get('message', '')}")
        regression = {"night": label, "night_id": meta["id"], "finding": finding}
        # the night's folder is already stored (immutable): the finding goes beside it, with the bisect's
        # records, so later nights that still regress inherit it instead of bisecting again
        kept = self.out / "bisect-stored"
        if (self.out / "bisect").is_dir():
            _copy_kept(self.out / "bisect", kept)
        kept.mkdir(parents=True, exist_ok=True)
        (kept / REGRESSION_FILE).write_text(json.dumps(regression, indent=1) + "\n", encoding="utf-8")
        self.store.add_bisect(str(meta["id"]), kept)
        return JobResult(REGRESSED, f"REGRESSED at night {label} — {finding}", 1, lines=lines)

    def _write_summary(self, result: JobResult) -> None:
        md = [f"# llmbench nightly: {result.headline}", "", *[f"- {ln}" for ln in result.lines], ""]
        md += [
            f"History: `{self.out / 'history' / 'history.md'}`, trend page `{self.out / 'history' / 'history.html'}`"
        ]
        md += [f"Store: `{self.store.url}`, night `{result.night_id}`", ""]
        text = "\n".join(md) + "\n"
        (self.out / "nightly.md").write_text(text, encoding="utf-8")
        step = os.environ.get("GITHUB_STEP_SUMMARY")
        if step:
            with open(step, "a", encoding="utf-8") as f:
                f.write(text)


def bisect_finding(record: Mapping[str, Any]) -> str:
    """``culprit Y`` or ``unknown between Y and Z`` from a bisect record (its words otherwise)."""
    status = record.get("status")
    if status == "culprit" and record.get("culprit"):
        return f"culprit {record['culprit']}"
    if record.get("last_good") and record.get("first_bad") and status in ("range", "unknown"):
        return f"unknown between {record['last_good']} and {record['first_bad']}"
    return f"{status}: {record.get('message', '')}".strip()


__all__ = ["JobResult", "JobSettings", "NightlyJob", "bisect_finding", "run_logged"]
