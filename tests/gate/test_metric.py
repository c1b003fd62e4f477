"""Defaults from metric names, and how observations are read."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_llmbench.gate.metric import Observation, default_direction, default_hardware_bound, resolve_direction


@pytest.mark.parametrize(
    ("metric", "direction", "hardware"),
    [
        ("output_throughput", "higher", True),
        ("accept_length", "higher", False),
        ("gsm8k_accuracy", "higher", False),
        ("bfcl_passed", "higher", False),
        ("decision_score", "higher", False),
        ("gsm8k_correct", "higher", False),
        ("median_ttft_ms", "lower", True),
        ("p99_tpot_ms", "lower", True),
        ("mean_itl_ms", "lower", True),
        ("median_e2e_latency_ms", "lower", True),
        ("failed", "lower", False),
        ("errors", "lower", False),
        ("peak_memory_gb", "lower", True),
        ("log_loss", "lower", False),
        ("ece", "lower", False),
        ("brier", "lower", False),
        ("max_output_tokens_per_s", "higher", True),
        ("startup_s", "lower", True),
    ],
)
def test_defaults_from_the_name(metric, direction, hardware):
    assert default_direction(metric) == direction
    assert default_hardware_bound(metric) is hardware


def test_unknown_or_ambiguous_names_ask_for_a_direction():
    with pytest.raises(ValueError, match="pass direction='higher' or direction='lower'"):
        default_direction("x")
    with pytest.raises(ValueError, match="both"):
        default_direction("passed_errors")
    assert resolve_direction("x", "lower") == "lower"
    with pytest.raises(ValueError, match="'higher' or 'lower'"):
        resolve_direction("x", "up")


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
