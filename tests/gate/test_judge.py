"""The pure judge: direction from the stored entry, the budget applied to a model's verdict, families."""

from __future__ import annotations

import pytest

from pytest_llmbench.gate.judge import beyond_band, direction_for, family_of, judge
from pytest_llmbench.gate.noise import Relative, StdErr
from pytest_llmbench.gate.types import BaselineEntry, Observation

SE = {"name": "StdErr"}


def test_stored_direction_wins_over_the_name():
    """Defect at 8fab55e: the direction stored in the baseline was ignored (the name's was used)."""
    entry = BaselineEntry(10.0, "lower", SE)
    assert direction_for("output_throughput", None, entry) == "lower"
    assert direction_for("weird_metric", None, entry) == "lower"  # a name the gate cannot read is fine too


def test_explicit_direction_contradicting_the_baseline_is_an_error_unless_re_recording():
    entry = BaselineEntry(10.0, "lower", SE)
    with pytest.raises(ValueError, match=r"contradicts the baseline's direction 'lower'.*--update-baselines=all"):
        direction_for("x", "higher", entry)
    assert direction_for("x", "higher", entry, overwrite=True) == "higher"


def test_stored_direction_turns_the_gate_around():
    entry = BaselineEntry(10.0, "lower", SE, n=30, se=0.1)
    v = judge(entry, Observation(11.0, se=0.1, n=30), StdErr(), direction_for("output_throughput", None, entry))
    assert v.status == "REGRESSED"  # higher throughput is worse when the baseline says lower is better


def test_budget_turns_a_band_exceeded_with_a_large_p_into_a_pass_and_says_why():
    entry = BaselineEntry(10.0, "higher", SE, n=30, se=0.1)
    obs = Observation(9.7, se=0.1, n=30)  # z = 2.1: beyond k=2, p ≈ 0.02
    raw = judge(entry, obs, StdErr(), "higher")
    assert raw.status == "REGRESSED" and 0.01 < raw.p_value < 0.03
    spent = judge(entry, obs, StdErr(), "higher", threshold=0.001)
    assert spent.status == "pass" and "within the suite's error budget" in spent.rule
    assert beyond_band(spent)
    kept = judge(entry, obs, StdErr(), "higher", threshold=0.05)
    assert kept.status == "REGRESSED" and "≤ budget 0.05" in kept.rule


def test_fixed_bands_have_no_p_and_ignore_the_budget():
    v = judge(BaselineEntry(100.0, "higher", {}), Observation(90.0), Relative(0.05), "higher", threshold=1e-9)
    assert v.status == "REGRESSED" and v.p_value is None


def test_families():
    assert family_of("benches/test_serving_cpu.py::test_serving[chat-1u]", True) == "timing"
    assert family_of("benches/test_quality_cpu.py::test_gsm8k", False) == "quality"
    assert family_of("benches/test_decisions_cpu.py::test_canary_decisions", False) == "decisions"
    assert family_of("benches/test_decisions_cpu.py::test_x", True) == "timing"
    assert family_of("t.py::t", False, "decisions") == "decisions"
