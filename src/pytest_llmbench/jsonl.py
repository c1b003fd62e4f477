"""JSON Lines, read one object at a time, with every bad line named as ``file:line``.

One reader for every JSONL the project touches (results.jsonl, eval data sets, decision sets);
plain or gzipped. Files a session appends to (results*.jsonl) are read with ``torn="warn"``: a line cut
short by a crash or a SIGKILL mid-write is skipped with a :class:`TornLineWarning` naming it, so one torn
line never makes the rest of the file unreadable; any other bad line is still an error.
"""

from __future__ import annotations

import gzip
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal


class TornLineWarning(UserWarning):
    """A JSONL line that ends before its object does (a write cut short) was skipped."""


def cut_short(line: str, e: json.JSONDecodeError) -> bool:
    """Whether ``line`` failed to parse only because it ends too early (a torn write), not because it is
    something else than JSON: the decoder ran off its end."""
    text = line.rstrip()
    if not text.startswith("{"):
        return False
    if e.msg.startswith("Unterminated string") or e.pos >= len(text):
        return True
    return any(text.endswith(w[:k]) and e.pos == len(text) - k for w in _WORDS for k in range(1, len(w)))


_WORDS = ("true", "false", "null")  # a write cut inside one of these: ``{"ok": tru``


def iter_jsonl(
    path: Path | str, error: type[Exception] = ValueError, *, torn: Literal["error", "warn"] = "error"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise ``error`` naming file:line (with
    ``torn="warn"``, a line cut short is skipped with a :class:`TornLineWarning` instead)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                if torn == "warn" and cut_short(line, e):
                    warnings.warn(
                        f"{path}:{n}: skipped a line cut short ({len(line.rstrip())} bytes, a write interrupted "
                        "by a crash); the lines around it are read",
                        TornLineWarning,
                        stacklevel=2,
                    )
                    continue
                raise error(f"{path}:{n}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise error(f"{path}:{n}: expected a JSON object per line")
            yield n, row
