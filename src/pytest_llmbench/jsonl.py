"""JSON Lines, read one object at a time, with every bad line named as ``file:line``.

One reader for every JSONL the project touches (results.jsonl, eval data sets, decision sets);
plain or gzipped.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def iter_jsonl(path: Path | str, error: type[Exception] = ValueError) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise ``error`` naming file:line."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise error(f"{path}:{n}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise error(f"{path}:{n}: expected a JSON object per line")
            yield n, row
