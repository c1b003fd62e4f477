"""The source protocol every data set follows, the two kinds of source, and the registry by name.

A source knows where its set comes from and how its rows become items (:class:`~.prompt.Prompt` for
prompt sets, :class:`~pytest_llmbench.datasets.decision_schema.Case` for decision sets). Adding a set =
one :func:`register` call with a :class:`WheelSource` or :class:`LocalSource` (or your own class with
``name`` and ``load``); it is then available to the ``datasets`` fixture by name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_llmbench.datasets.files import DatasetNotFound, data_dir, env_name, local_file, wheel_file


@runtime_checkable
class Source(Protocol):
    """One data set: ``load`` returns its items or raises DatasetNotFound naming where it looked."""

    @property
    def name(self) -> str:
        """The set's name (what ``load`` and the ``datasets`` fixture take); read-only, so a frozen
        dataclass satisfies the protocol."""
        ...

    def load(self, folder: Path, split: str | None = None) -> list[Any]:
        """Every item of the set (of ``split`` where the set has splits); ``folder`` is the data folder."""
        ...


@dataclass(frozen=True)
class WheelSource:
    """A file shipped inside an installed wheel (``$LLMBENCH_<SET>`` may point at another copy)."""

    name: str
    dist: str
    inner: str
    read: Callable[[Path], list[Any]]

    def path(self) -> Path:
        env = os.environ.get(env_name(self.name))
        return Path(env).expanduser() if env else wheel_file(self.dist, self.inner)

    def load(self, folder: Path, split: str | None = None) -> list[Any]:
        return self.read(self.path())


@dataclass(frozen=True)
class LocalSource:
    """A file under the local data folder (the first of ``candidates`` that exists), or ``$LLMBENCH_<SET>``."""

    name: str
    candidates: Sequence[str]
    read: Callable[[Path], list[Any]]

    def load(self, folder: Path, split: str | None = None) -> list[Any]:
        return self.read(local_file(self.name, self.candidates, folder))


SOURCES: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Make ``source`` loadable by its name (a later one with the same name replaces it)."""
    SOURCES[source.name] = source
    return source


def get_source(name: str) -> Source:
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown data set {name!r}; known: {', '.join(sorted(SOURCES))}") from None


def load(name: str, split: str | None = None, *, folder: str | os.PathLike[str] | None = None) -> list[Any]:
    """Every item of set ``name``; raises DatasetNotFound (naming the path) when it is not here."""
    return get_source(name).load(data_dir(folder), split)


__all__ = ["SOURCES", "DatasetNotFound", "LocalSource", "Source", "WheelSource", "get_source", "load", "register"]
