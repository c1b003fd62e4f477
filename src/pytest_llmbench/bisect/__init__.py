"""Bisect: an ordered list of builds and one in-session comparison per step.

``compare/`` decides each step; this package only orders the steps (search.py), gets the builds ready
and keeps them (builds.py), runs each step as the user's pytest session (runner.py) and keeps the record
(record.py). The command is ``python -m pytest_llmbench bisect`` (cli/bisect.py).
"""

from pytest_llmbench.bisect.builds import (
    BinaryFolder,
    Build,
    BuildCache,
    BuildError,
    ImageTag,
    Materialized,
    PipVersion,
    parse_build,
)
from pytest_llmbench.bisect.search import Finding, Search, Step, StepResult, bisect

__all__ = [
    "BinaryFolder",
    "Build",
    "BuildCache",
    "BuildError",
    "Finding",
    "ImageTag",
    "Materialized",
    "PipVersion",
    "Search",
    "Step",
    "StepResult",
    "bisect",
    "parse_build",
]
