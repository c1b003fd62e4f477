"""The bisect's results lines: one ``bisect_step`` per step as it finishes, one ``bisect`` at the end.

They go into ``<out>/results.jsonl`` through the results sink's own pieces (``sink.plain``: JSON-safe,
secrets scrubbed; ``ResultsWriter``: one flushed line each), the same file shape every session writes,
so ``python -m pytest_llmbench report <out>`` reads it. Builds are named by their label plus what their
materializer knows (version, digest, folder, binary hash).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_llmbench import sink
from pytest_llmbench.bisect.builds import BuildCache, BuildError
from pytest_llmbench.bisect.search import Finding, Step, StepResult
from pytest_llmbench.records.results import ResultsWriter

#: the shown comparison's fields a step line carries flat (resume.py reads them back)
SHOWN = ("metric", "test_key", "verdict", "ratio", "difference", "ci_low", "ci_high", "se", "higher_is_better")


def step_entry(step: Step, result: StepResult, labels: Sequence[str]) -> dict[str, Any]:
    d = dict(result.details)
    shown = d.get("shown") or {}
    return {
        "step": step.number,
        "kind": step.kind,
        "attempt": step.attempt,
        "reference": labels[step.reference],
        "candidate": labels[step.candidate],
        "reference_index": step.reference,
        "candidate_index": step.candidate,
        "outcome": result.outcome,
        #: units against an unsized first attempt (a sized step × 2^attempt) and, for a halving judged by
        #: which end it resembles, its z and the session's own verdict
        "units": step.units,
        "z": d.get("z"),
        "session_outcome": d.get("session_outcome"),
        "skipped": labels[result.skipped] if result.skipped is not None else None,
        "reason": result.reason,
        **{k: shown.get(k) for k in SHOWN},
        "comparisons": d.get("comparisons") or [],
        "gpu_s": result.seconds,
        "session_s": d.get("session_s"),
        "build_s": d.get("build_s"),
        "results_dir": d.get("results_dir"),
        "replayed_from": d.get("replayed_from") if result.replayed else None,
    }


def build_entries(cache: BuildCache, finding: Finding | None = None) -> list[dict[str, Any]]:
    out = []
    for i, b in enumerate(cache.builds):
        known = cache.known(i)
        entry: dict[str, Any] = {"index": i, "label": b.label, "type": type(b).__name__}
        if isinstance(known, BuildError):
            entry["error"] = str(known)
        elif known is not None:
            entry |= {"kind": known.kind, "identity": dict(known.identity), "build_s": known.seconds}
            entry["cached"] = known.cached
        if finding is not None:
            entry["state"] = finding.states[i]
            if i in finding.reasons:
                entry["reason"] = finding.reasons[i]
        out.append(entry)
    return out


def bisect_line(
    finding: Finding,
    cache: BuildCache,
    *,
    pytest_args: Sequence[str],
    budget_s: float | None,
    metric: str,
    command: str = "",
) -> dict[str, Any]:
    labels = [b.label for b in cache.builds]
    return {
        "record": "bisect",
        "status": finding.status,
        "message": finding.message,
        "good": labels[0],
        "bad": labels[-1],
        "last_good": labels[finding.last_good],
        "first_bad": labels[finding.first_bad],
        "culprit": labels[finding.culprit] if finding.culprit is not None else None,
        #: what a resumed run (--resume) needs built, in order: the reference, then the next middles
        "to_go_on": [labels[i] for i in finding.to_go_on()],
        "builds": build_entries(cache, finding),
        "steps": [step_entry(s, r, labels) for s, r in finding.steps],
        "comparisons": finding.comparisons,
        "gpu_s": finding.seconds,
        "budget_s": budget_s,
        "metric": metric,
        "pytest_args": list(pytest_args),
        "command": command,
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class BisectLog:
    """``<out>/results.jsonl`` of a bisect: steps as they finish (an interrupted bisect keeps them), then
    the result."""

    def __init__(self, out: Path):
        self.writer = ResultsWriter(out)

    def write(self, record: Mapping[str, Any]) -> dict[str, Any]:
        line = sink.plain(record)
        self.writer.write(line)
        return line

    def step(self, step: Step, result: StepResult, labels: Sequence[str]) -> dict[str, Any]:
        return self.write({"record": "bisect_step", **step_entry(step, result, labels)})


__all__ = ["SHOWN", "BisectLog", "bisect_line", "build_entries", "step_entry"]
