"""gate/types.py: an Observation is checked where it is made, so no noise model sees a NaN."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_llmbench.gate.types import Observation


def test_observation_of_values_number_and_count():
    obs = Observation.of([1.0, 2.0, 3.0, 4.0])
    assert (obs.value, obs.n, obs.samples) == (2.5, 4, 4)
    assert obs.se == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert Observation.of(np.float32(2.5)).value == 2.5
    assert Observation.of(171, n=205) == Observation(171.0, n=205)
    assert Observation.of(3.0, se=0.2).se == 0.2


@pytest.mark.parametrize(
    ("bad", "match"),
    [([], "empty"), (True, "bool"), ("1.0", "str"), ([1.0, float("nan")], "non-finite"), (float("inf"), "inf")],
)
def test_observation_rejects_what_cannot_be_gated(bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        Observation.of(bad)


def test_cases_alone_are_the_per_sample_values_and_are_checked_like_them():
    obs = Observation.of(cases={"b": 3.0, "a": 1.0})
    assert obs.value == 2.0 and obs.samples == 2 and obs.n == 2 and list(obs.cases) == ["a", "b"]
    assert Observation.of(7, n=10, cases={"a": 1, "b": 0}).value == 7.0  # a count rides with its cases
    with pytest.raises(ValueError, match="finite"):
        Observation.of(cases={"a": float("nan"), "b": 1.0})
    with pytest.raises(ValueError, match="se= must be a finite number"):
        Observation.of(cases={"a": 1.0, "b": 2.0}, se=float("nan"))  # se= is validated with cases too
    with pytest.raises(TypeError, match="observed is None"):
        Observation.of(None)
