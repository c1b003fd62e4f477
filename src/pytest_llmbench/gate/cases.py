"""Per-case sidecars: the values behind one baseline entry, one case per line, for the paired gates.

A baseline entry keeps a summary (mean and SE, or a count of n); a paired gate needs the value of every
case (accept length per prompt and seed, pass/fail per BFCL or GSM8K case, correct or score per
decision). They live next to the config's YAML file, one JSON Lines file per entry::

    baselines/smol-ngram.yaml
    baselines/smol-ngram.cases/shared/<test key>/<metric>.jsonl
    baselines/smol-ngram.cases/runners/<runner>/<test key>/<metric>.jsonl

The first line names the entry (so a file is never paired with the wrong one); then one case per line,
sorted by case id, so a flipped case is a one-line diff. Folder and file names keep only
``[A-Za-z0-9._-]``; a name that needed changing gets a short hash of the original, so two test keys
never share a file. A file that cannot be read is an error naming it and the line, and is never
overwritten.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.gate.types import clean_cases

VERSION = 1
SUFFIX = ".cases"  # baselines/<config>.cases/
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_NAME = 80
_SIG_DIGITS = 6


class CasesFileError(Exception):
    """A sidecar exists but cannot be read; names the file and the line."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        super().__init__(
            f"per-case baseline file {path}:{line}: {reason}. Fix or delete the file; "
            f"pytest-llmbench never overwrites it"
        )


def safe_name(name: str) -> str:
    """A file name for any test key or metric: unchanged when already safe, else slug + short hash."""
    slug = _SAFE.sub("_", name)[:_MAX_NAME]
    if slug == name and slug not in ("", ".", ".."):
        return name
    return f"{slug}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"


def sidecar_path(baseline_file: Path, runner: str | None, test_key: str, metric: str) -> Path:
    """Where the cases of one entry of ``baselines/<config>.yaml`` live."""
    root = baseline_file.with_name(baseline_file.stem + SUFFIX)
    section = root / "shared" if runner is None else root / "runners" / safe_name(runner)
    return section / safe_name(test_key) / f"{safe_name(metric)}.jsonl"


def stored(x: float) -> float | int:
    """A value at the sidecar's precision (6 significant digits); the paired models compare at it,
    so a rerun that repeats every case exactly is not judged on rounding residue."""
    r = float(f"{x:.{_SIG_DIGITS}g}")
    return int(r) if r.is_integer() and abs(r) < 1e15 else r


def dumps_cases(test_key: str, metric: str, runner: str | None, cases: Mapping[str, float]) -> str:
    """The sidecar's text: a header line, then ``{"case": id, "value": v}`` sorted by id."""
    checked = clean_cases(cases)
    header = {"version": VERSION, "test_key": test_key, "metric": metric, "runner": runner, "n": len(checked)}
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [json.dumps({"case": cid, "value": stored(v)}, ensure_ascii=False) for cid, v in checked.items()]
    return "\n".join(lines) + "\n"


def read_cases(path: Path, *, test_key: str | None = None, metric: str | None = None) -> dict[str, float] | None:
    """The cases stored at ``path`` (None when there is no file); raises CasesFileError naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise CasesFileError(path, 0, f"cannot read it ({e})") from None
    lines = text.splitlines()
    if not lines:
        raise CasesFileError(path, 1, "empty file (expected a header line, then one case per line)")
    header = _json(path, 1, lines[0])
    if not isinstance(header, dict) or header.get("version") != VERSION:
        raise CasesFileError(
            path, 1, f'expected a header {{"version": {VERSION}, "test_key": …}}, found {lines[0][:80]!r}'
        )
    for key, want in (("test_key", test_key), ("metric", metric)):
        if want is not None and header.get(key) != want:
            raise CasesFileError(path, 1, f"the header's {key} is {header.get(key)!r}, not {want!r}")
    cases: dict[str, float] = {}
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        row = _json(path, lineno, line)
        if not isinstance(row, dict) or set(row) != {"case", "value"}:
            raise CasesFileError(path, lineno, f'expected {{"case": id, "value": number}}, found {line[:80]!r}')
        cid, v = row["case"], row["value"]
        if not isinstance(cid, str) or not cid:
            raise CasesFileError(path, lineno, f"case id must be a non-empty string, found {cid!r}")
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise CasesFileError(path, lineno, f"case {cid!r}: value must be a finite number, found {v!r}")
        if cid in cases:
            raise CasesFileError(path, lineno, f"case {cid!r} appears twice")
        cases[cid] = float(v)
    if header.get("n") is not None and header["n"] != len(cases):
        raise CasesFileError(path, 1, f"the header says n={header['n']} but the file holds {len(cases)} cases")
    if not cases:
        raise CasesFileError(path, 2, "no cases after the header")
    return cases


def _json(path: Path, lineno: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise CasesFileError(path, lineno, f"invalid JSON ({e.msg}: column {e.colno})") from None  # msg may end "at"


def write_cases(path: Path, test_key: str, metric: str, runner: str | None, cases: Mapping[str, float]) -> None:
    """Write atomically; an existing file that cannot be read is left as it is (CasesFileError)."""
    read_cases(path)  # refuse to replace a file a person has to look at
    write_atomic(path, dumps_cases(test_key, metric, runner, cases))


def remove_cases(path: Path) -> bool:
    """Drop a sidecar whose entry is now written without cases (stale cases would pair wrongly)."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    for folder in (path.parent, path.parent.parent):  # tidy empty test-key / section folders
        try:
            folder.rmdir()
        except OSError:
            break
    return True


def save(
    baseline_file: Path, runner: str | None, test_key: str, metric: str, cases: Mapping[str, float] | None
) -> None:
    """What ``--update-baselines`` does beside writing an entry (gate/store.py): write its cases, or drop
    stale ones."""
    path = sidecar_path(baseline_file, runner, test_key, metric)
    if cases:
        write_cases(path, test_key, metric, runner, cases)
    else:
        remove_cases(path)
