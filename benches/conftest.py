"""Noise models shared by the bench files.

CPU timing on these shared 2-core machines drifts by more than 10% within the hour (REFERENCE.md:
148 vs 127–133 out tok/s twenty minutes apart), so timing gates learn their spread from the
baseline's own history of accepted runs and fall back to a wide relative band until three runs exist.
Quality metrics (accept length at temperature 0) stay tight: k standard errors.
"""

import pytest

from pytest_llmbench.gate import History, Relative, StdErr


@pytest.fixture
def cpu_timing_noise():
    return History(k=3.0, min_runs=3, fallback=Relative(0.30))


@pytest.fixture
def quality_noise():
    return StdErr(k=2.0)
