"""Go on with a bisect another run began: its recorded steps are answered from the record, not run again.

A bisect of real GPU builds outlasts a device lease (a ~2% slowdown takes ~8 minutes a step; a lease is
30), and a nightly's bisect may be cut by the runner's timeout. ``--resume DIR`` reads DIR's ``bisect_step``
lines (written as each step finished, so an interrupted bisect has them) and answers every step the search
asks for that the record holds — same kind, same reference and candidate *labels*, same attempt — with the
recorded outcome. The search is deterministic in its outcomes, so it walks the recorded path and runs live
from the first step the record lacks: an inconclusive step whose retry the budget refused gets that retry.
Replayed steps cost this run nothing (``StepResult.replayed``); their recorded seconds still price the steps
to come. The confirmation at the end (Pinpoint's sandwich) runs on this machine like any step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmbench.bisect.record import SHOWN
from pytest_llmbench.bisect.search import OUTCOMES, Step, StepResult, reading_of
from pytest_llmbench.jsonl import iter_jsonl
from pytest_llmbench.records.read import read_line

Key = tuple[str, str, str, int]  # kind, reference label, candidate label, attempt


@dataclass(frozen=True)
class RecordedStep:
    key: Key
    result: StepResult
    where: str  # "<file>:<line>", for errors and the replay note


def _results_file(folder: Path) -> Path:
    path = folder / "results.jsonl" if folder.is_dir() else folder
    if not path.is_file():
        raise ValueError(f"--resume {folder}: no results.jsonl (give an earlier bisect's --out folder)")
    return path


def recorded_steps(folder: Path, labels: Sequence[str]) -> list[RecordedStep]:
    """The ``bisect_step`` lines of an earlier bisect, checked against this bisect's builds (by label)."""
    path = _results_file(folder)
    index = {label: i for i, label in enumerate(labels)}
    out: list[RecordedStep] = []
    for n, line in iter_jsonl(path):
        where = f"{path}:{n}"
        if line.get("record") != "bisect_step":
            continue
        rec = read_line(line, where)
        try:
            kind, ref, cand = str(rec["kind"]), str(rec["reference"]), str(rec["candidate"])
            attempt, outcome = int(rec.get("attempt") or 0), str(rec["outcome"])
            # a halving judged by which end it resembles keeps the session's own verdict: the search re-judges
            outcome = str(rec.get("session_outcome") or outcome)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"--resume {where}: a bisect_step line without {e}") from None
        for label in (ref, cand):
            if label not in index:
                raise ValueError(
                    f"--resume {where}: build {label!r} is not among this bisect's builds ({', '.join(labels)}); "
                    f"resume with the same build list"
                )
        if outcome not in OUTCOMES:
            raise ValueError(f"--resume {where}: outcome {outcome!r} is not one of {', '.join(OUTCOMES)}")
        skipped = rec.get("skipped")
        if outcome == "skip" and (not isinstance(skipped, str) or skipped not in index):
            raise ValueError(f"--resume {where}: a skip that names no build of this bisect ({skipped!r})")
        details: dict[str, Any] = {
            "shown": {k: rec.get(k) for k in SHOWN},
            "comparisons": rec.get("comparisons") or [],
            "session_s": rec.get("session_s"),
            "build_s": rec.get("build_s"),
            "results_dir": rec.get("results_dir"),
            # where it was measured: a line an earlier resume replayed names its own source (lease 3, not 4)
            "replayed_from": str(rec.get("replayed_from") or where),
        }
        result = StepResult(
            outcome,
            float(rec.get("gpu_s") or 0.0),
            build_seconds=float(rec.get("build_s") or 0.0),
            skipped=index[skipped] if outcome == "skip" and isinstance(skipped, str) else None,
            reason=str(rec.get("reason") or ""),
            details=details,
            replayed=True,
            reading=reading_of(details["shown"]),
        )
        out.append(RecordedStep((kind, ref, cand, attempt), result, where))
    if not out:
        raise ValueError(f"--resume {path}: no bisect_step lines (nothing to go on from)")
    return out


class Replay:
    """A step comparer that answers from the record where it can and asks ``live`` for the rest."""

    def __init__(self, recorded: Sequence[RecordedStep], labels: Sequence[str], live: Callable[[Step], StepResult]):
        self._recorded = {r.key: r for r in recorded}  # a key recorded twice: the later line wins
        self._labels = list(labels)
        self._live = live
        self.used: set[Key] = set()
        self.live_steps = 0

    def key(self, step: Step) -> Key:
        return (step.kind, self._labels[step.reference], self._labels[step.candidate], step.attempt)

    def has(self, step: Step) -> bool:
        """Whether the record answers ``step`` (``Search(recorded=...)``: the budget never refuses it)."""
        return self.key(step) in self._recorded

    def __call__(self, step: Step) -> StepResult:
        key = self.key(step)
        found = self._recorded.get(key)
        if found is not None:  # a comparison of the same two builds at the same units: a fact, wherever asked
            self.used.add(key)
            return found.result
        self.live_steps += 1
        return self._live(step)

    @property
    def unused(self) -> list[RecordedStep]:
        """Recorded steps the search never asked for: the build list or the record differs from the run's."""
        return [r for k, r in self._recorded.items() if k not in self.used]


__all__ = ["RecordedStep", "Replay", "recorded_steps"]
