"""Defaults from metric names: direction and whether a metric depends on the runner."""

from __future__ import annotations

import pytest

from pytest_llmbench.gate.metric import default_direction, default_hardware_bound, resolve_direction


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
