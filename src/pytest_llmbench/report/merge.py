"""Merge the results folders of a sharded run into one folder shaped like a single run's.

Each shard (``--llmbench-shard K/N``) ran whole configs, so every config belongs to exactly one source
folder; merging is concatenating their ``results*.jsonl`` into one ``results.jsonl`` and copying each
config's folder (server.log, resources.json, decisions/ with calibration and answers). A config found
in two sources means the shards overlapped: that is an error naming it, never a silent pick.

``merged_from.json`` says which folder (and which runner, host and shard) each config came from.
"""

from __future__ import annotations

import filecmp
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.jsonl import iter_jsonl

NO_SERVER = "(tests without a server)"  # the owner of records with no config, for the overlap check
#: Records about a whole session, not a config or a test: every shard writes its own, all are kept.
SESSION_RECORDS = frozenset({"gate_budget", "comparison_budget", "session", "session_start", "session_error"})
_NO_SERVER_NAMES = (None, "_noserver_")
MANIFEST = "merged_from.json"


class MergeError(LlmbenchError):
    """The sources cannot be merged (overlap, missing folder, occupied output); the message says which."""


@dataclass
class Source:
    """One shard's results folder, read."""

    dir: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    owned: set[str] = field(default_factory=set)  # configs (and top-level folders) it holds
    origins: set[tuple[str | None, str | None, str | None]] = field(default_factory=set)


def read_source(folder: Path) -> Source:
    """Records of every results*.jsonl in ``folder`` (sorted by name, as load_results reads them)."""
    if not folder.is_dir():
        raise MergeError(f"{folder}: not a folder")
    src = Source(dir=folder)
    files = sorted(folder.glob("results*.jsonl"))
    if not files:  # an empty folder (a shard that never ran, a wrong path) must not merge into "no results"
        raise MergeError(f"{folder}: no results*.jsonl in it: not a results folder (did that shard run?)")
    for f in files:
        for _, rec in iter_jsonl(f, MergeError, torn="warn"):
            src.records.append(rec)
            if rec.get("record") in SESSION_RECORDS:
                continue
            name = rec.get("config")
            src.owned.add(NO_SERVER if name in _NO_SERVER_NAMES else str(name))
            o = rec.get("origin") or {}
            src.origins.add((o.get("profile"), o.get("host"), o.get("shard")))
    src.owned.update(p.name for p in folder.iterdir() if p.is_dir())
    return src


def _relocate(value: Any, src: Path, out: Path) -> Any:
    """A path written by the shard (on its own machine) that points into its results folder → the same
    file in ``out``: the longest tail of the path that exists under ``src``."""
    if not isinstance(value, str) or "/" not in value:
        return value
    parts = Path(value).parts
    for i in range(1, len(parts)):
        tail = Path(*parts[i:])
        if (src / tail).is_file():
            return str(out / tail)
    return value


def merge_results(out: Path, folders: list[Path]) -> dict[str, Any]:
    """Write the merged folder ``out`` (which must be absent or empty); returns the manifest."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MergeError(f"{out}: output folder exists and is not empty")
    if not folders:
        raise MergeError("no results folders to merge")
    sources = [read_source(Path(f)) for f in folders]
    owner: dict[str, Path] = {}
    for src in sources:
        for name in sorted(src.owned):
            if name in owner:
                raise MergeError(
                    f"config {name!r} is in both {owner[name]} and {src.dir}: the shards overlap "
                    f"(same --llmbench-shard twice, or different configs/-m/-k per shard?)"
                )
            owner[name] = src.dir
    top_files: dict[str, Path] = {}
    for src in sources:
        for f in sorted(p for p in src.dir.iterdir() if p.is_file() and not _is_results(p)):
            if f.name in top_files and not filecmp.cmp(top_files[f.name], f, shallow=False):
                raise MergeError(f"{f.name} differs between {top_files[f.name].parent} and {src.dir}")
            top_files.setdefault(f.name, f)

    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.jsonl", "w", encoding="utf-8") as results:
        for src in sources:
            for rec in src.records:
                rec = {k: _relocate(v, src.dir, out) for k, v in rec.items()}
                results.write(json.dumps(rec, sort_keys=True) + "\n")
    for src in sources:
        for d in sorted(p for p in src.dir.iterdir() if p.is_dir()):
            shutil.copytree(d, out / d.name)
    for name, f in top_files.items():
        shutil.copy2(f, out / name)
    manifest = {"sources": [_describe(src) for src in sources], "missing_shards": _missing_shards(sources)}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def _is_results(path: Path) -> bool:
    """results*.jsonl (merged into one), or a session's live marker (records/results.py: not copied)."""
    return (path.name.startswith("results") and path.suffix == ".jsonl") or path.name.startswith(".llmbench-session.")


def _describe(src: Source) -> dict[str, Any]:
    return {
        "dir": str(src.dir),
        "records": len(src.records),
        "configs": sorted(src.owned),
        "origins": [{"profile": p, "host": h, "shard": s} for p, h, s in sorted(src.origins, key=str)],
    }


def _missing_shards(sources: list[Source]) -> list[str]:
    """Shards K/N that no source came from, when the sources say they are shards of N."""
    seen = {s for src in sources for _, _, s in src.origins if s}
    counts = {int(s.split("/")[1]) for s in seen}
    if len(counts) != 1:
        return []
    n = counts.pop()
    return [f"{k}/{n}" for k in range(1, n + 1) if f"{k}/{n}" not in seen]
