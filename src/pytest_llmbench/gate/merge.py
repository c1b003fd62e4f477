"""Merge the baseline folders written by the shards of a fleet run back into one.

Every shard starts from the same baselines (the checkout) and ``--update-baselines`` rewrites only the
files of the configs it ran. So a change is whatever differs from that common *base*: merging applies
each shard's changes, entry by entry for the YAML files (one file per config) and file by file for
everything else (``decisions/<config>/*.answers.jsonl``). Two shards changing the same entry differently
is an error naming the file and the entry; nothing is written then.
"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.gate.baselines import BaselineFile, BaselineFileError, Key, dumps, load
from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.gate.types import BaselineEntry


class BaselineMergeError(LlmbenchError):
    """Two shards changed the same entry (or file) differently, or a file cannot be read."""


@dataclass(frozen=True)
class Change:
    path: str  # relative to the baselines folder
    entry: Key | None  # None for a whole non-YAML file
    source: Path

    def describe(self) -> str:
        if self.entry is None:
            return self.path
        runner, test, metric = self.entry
        return f"{self.path}: {'runners › ' + runner if runner else 'shared'} › {test} › {metric}"


def _files(folder: Path) -> set[str]:
    if not folder.is_dir():
        return set()
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")}


def _load(path: Path) -> BaselineFile:
    try:
        bf = load(path, path.stem)
        if bf.exists:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            bf.config = str(data.get("config") or path.stem)
    except BaselineFileError as e:
        raise BaselineMergeError(str(e)) from None
    return bf


def _entries(bf: BaselineFile) -> dict[Key, BaselineEntry]:
    out: dict[Key, BaselineEntry] = {}
    for test, metrics in bf.shared.items():
        for metric, e in metrics.items():
            out[(None, test, metric)] = e
    for runner, tests in bf.runners.items():
        for test, metrics in tests.items():
            for metric, e in metrics.items():
                out[(runner, test, metric)] = e
    return out


def merge_baselines(out: Path, sources: list[Path], base: Path | None = None) -> list[Change]:
    """Write ``base`` plus every source's changes to ``out`` (``base`` defaults to ``out`` itself: the
    checkout's baselines folder, updated in place). Returns the changes applied."""
    out = Path(out)
    base = Path(base) if base is not None else out
    for s in sources:
        if not Path(s).is_dir():
            raise BaselineMergeError(f"{s}: not a folder")
    names = _files(base).union(*(_files(Path(s)) for s in sources))
    changes: list[Change] = []
    texts: dict[str, str | Path] = {}  # new content per relative path: YAML text, or a file to copy
    for rel in sorted(names):
        if rel.endswith(".yaml") and "/" not in rel:
            text, applied = _merge_yaml(rel, base, sources)
            if text is not None:
                texts[rel] = text
        else:
            src, applied = _merge_file(rel, base, sources)
            if src is not None:
                texts[rel] = src
        changes += applied
    if base.resolve() != out.resolve():
        _copy_tree(base, out)
    for rel, content in texts.items():
        target = out / rel
        if isinstance(content, Path):
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
                shutil.copyfile(content, tmp.name)
            Path(tmp.name).replace(target)
        else:
            write_atomic(target, content)
    return changes


def _copy_tree(base: Path, out: Path) -> None:
    if base.is_dir():
        shutil.copytree(base, out, dirs_exist_ok=True)
    else:
        out.mkdir(parents=True, exist_ok=True)


def _merge_yaml(rel: str, base: Path, sources: list[Path]) -> tuple[str | None, list[Change]]:
    merged = _load(base / rel)
    before = _entries(merged)
    changed: dict[Key, tuple[BaselineEntry, Path]] = {}
    for s in sources:
        path = Path(s) / rel
        if not path.is_file():
            continue
        theirs = _load(path)
        merged.config = theirs.config if not merged.exists else merged.config
        for key, entry in _entries(theirs).items():
            if before.get(key) == entry:
                continue
            if key in changed and changed[key][0] != entry:
                c = Change(rel, key, Path(s))
                raise BaselineMergeError(
                    f"{c.describe()}: changed differently by {changed[key][1]} and {s}; "
                    f"a config's baselines should come from the one shard that ran it"
                )
            changed[key] = (entry, Path(s))
    if not changed:
        return None, []
    for (runner, test, metric), (entry, _) in changed.items():
        merged.put(runner, test, metric, entry)
    return dumps(merged), [
        Change(rel, key, src) for key, (_, src) in sorted(changed.items(), key=lambda kv: str(kv[0]))
    ]


def _merge_file(rel: str, base: Path, sources: list[Path]) -> tuple[Path | None, list[Change]]:
    original = base / rel
    pick: Path | None = None
    for s in sources:
        path = Path(s) / rel
        if not path.is_file() or (original.is_file() and filecmp.cmp(original, path, shallow=False)):
            continue
        if pick is not None and not filecmp.cmp(pick, path, shallow=False):
            raise BaselineMergeError(f"{rel}: changed differently by {pick.parents[len(Path(rel).parts) - 1]} and {s}")
        pick = pick or path
    if pick is None:
        return None, []
    return pick, [Change(rel, None, pick.parents[len(Path(rel).parts) - 1])]
