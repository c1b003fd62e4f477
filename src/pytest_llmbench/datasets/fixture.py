"""The ``datasets`` fixture: data sets by name in a test, where a set that is not here skips the test.

Loading functions raise :class:`~.files.DatasetNotFound` naming the path they looked for; this fixture is
the one place that becomes ``pytest.skip`` (a missing set is not a failure of the bench), and the one
place ``--llmbench-data`` (ini ``llmbench_data``) reaches the loaders.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_llmbench.datasets.decisions import load_split
from pytest_llmbench.datasets.files import DatasetNotFound, data_dir
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.prompt_sets import prompt_set
from pytest_llmbench.datasets.sources import load

T = TypeVar("T")


class DataSets:
    """Data sets of this session's data folder; every method skips the test when its set is absent."""

    def __init__(self, folder: Path):
        self.folder = folder

    def load(self, name: str, split: str | None = None) -> list[Any]:
        """Every item of set ``name`` (of ``split`` for decision sets)."""
        return self._or_skip(lambda: load(name, split, folder=self.folder))

    def prompt_set(self, name: str, n: int | None, seed: int = 1, *, single_turn: bool = True) -> list[Prompt]:
        """Set ``name`` sampled to ``n`` by ``seed``; single-turn unless asked otherwise."""
        return self._or_skip(lambda: prompt_set(name, n, seed, folder=self.folder, single_turn=single_turn))

    def cases(self, name: str, split: str, root: str | Path | None = None) -> list[Any]:
        """One split of a local decision set (``root``: its folder, when not the usual place)."""
        return self._or_skip(lambda: load_split(name, split, root, folder=self.folder))

    @staticmethod
    def _or_skip(load_it: Callable[[], T]) -> T:
        try:
            return load_it()
        except DatasetNotFound as e:
            pytest.skip(str(e))


def data_folder(config: pytest.Config) -> Path:
    """--llmbench-data, else ini llmbench_data, else $LLMBENCH_DATA_DIR, else the cache."""
    chosen = config.getoption("llmbench_data", None)
    if not chosen:
        try:
            chosen = config.getini("llmbench_data") or None
        except ValueError:  # the ini key is not registered (the plugin is not loaded)
            chosen = None
    return data_dir(chosen)


@pytest.fixture
def datasets(request: pytest.FixtureRequest) -> DataSets:
    """Data sets by name: ``datasets.prompt_set("mt-bench", 20, seed=1)``, ``datasets.cases("pubmedqa", "test")``."""
    return DataSets(data_folder(request.config))
