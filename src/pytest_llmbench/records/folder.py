"""A results folder read once into plain lists, for the report, the summary and compare.

Every reader of a finished session starts here, so a folder that is not a results folder fails once,
naming the path, and newer record fields (p/q values, comparison records) are read with ``.get`` so an
older folder still renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.gate.types import STATUSES
from pytest_llmbench.records.bench_serving import BenchServingError, is_bench_serving, read_records
from pytest_llmbench.records.kinds import FactsRecord, ServerRecord, VerdictRecord
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.records.results import iter_records
from pytest_llmbench.records.verdict import SessionVerdict, comparisons, session_verdict


class ResultsFolderError(LlmbenchError):
    """The path is not a readable results folder; the message names it."""


@dataclass
class ResultsFolder:
    """The records of one session, by kind, in the order they were written."""

    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)  # config → resources.json

    def kind(self, name: str) -> list[dict[str, Any]]:
        """The records of any kind, untyped: an eval's own (``bfcl``, ``accept_length``) or a plugin's. A
        declared kind reads typed through ``of_kind(folder.records, name)`` (records/read.py)."""
        return of_kind(self.records, name)

    @property
    def configs(self) -> list[str]:
        """Configs in the order they first appear (server starts first, then anything else)."""
        seen: dict[str, None] = {}
        for r in self.records:
            if r.get("config"):
                seen.setdefault(str(r["config"]), None)
        for name in self.resources:
            seen.setdefault(name, None)
        return list(seen)

    def verdicts(self) -> list[VerdictRecord]:
        """Verdict records, regressions first, then improved, new, pass (run order within each)."""
        order: dict[str, int] = {s: i for i, s in enumerate(STATUSES)}
        return sorted(of_kind(self.records, "verdict"), key=lambda v: order.get(str(v.get("status")), len(order)))

    def comparisons(self) -> list[dict[str, Any]]:
        """``comparison`` records with the suite step's q value and suite verdict on each (verdict.py)."""
        return comparisons(self.records)

    def session_verdict(self) -> SessionVerdict:
        """The run's one verdict (records/verdict.py): what every headline of the report says."""
        return session_verdict(self.records)

    def server(self, config: str) -> ServerRecord | dict[str, Any]:
        """The last server record of ``config`` (a restarted server writes a new one); {} when none."""
        found = [r for r in of_kind(self.records, "server") if r.get("config") == config]
        return found[-1] if found else {}

    def facts(self, config: str) -> dict[str, Any]:
        """resources.json of ``config``; else the facts record in results.jsonl."""
        if config in self.resources:
            return self.resources[config]
        found: list[FactsRecord] = [r for r in of_kind(self.records, "facts") if r.get("config") == config]
        return (found[-1].get("facts") or {}) if found else {}


def read_folder(path: Path | str, session: str | None = None) -> ResultsFolder:
    """Read ``results*.jsonl`` and each ``<config>/resources.json`` under ``path`` (with ``session``, only
    that session's records, and its resources as its facts records give them)."""
    root = Path(path)
    if is_bench_serving(root):  # a bench_serving JSONL file: one session (records/bench_serving.py)
        try:
            return ResultsFolder(root, read_records(root))
        except BenchServingError as e:
            raise ResultsFolderError(str(e)) from None
    if not root.is_dir():
        raise ResultsFolderError(
            f"{root}: not a folder (expected a results folder with results.jsonl, or a bench_serving JSONL file)"
        )
    try:
        records = list(iter_records(root, session=session))
    except FileNotFoundError:
        raise ResultsFolderError(f"{root}: no results*.jsonl here; is this a results folder?") from None
    except ValueError as e:  # iter_jsonl names file:line
        raise ResultsFolderError(str(e)) from None
    out = ResultsFolder(root, records)
    if session is not None:
        return out  # another session's resources.json may sit in a config folder: facts records are its own
    for res in sorted(root.glob("*/resources.json")):
        try:
            data = json.loads(res.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ResultsFolderError(f"{res}: not valid JSON ({e})") from None
        if isinstance(data, dict):
            out.resources[res.parent.name] = data
    return out
