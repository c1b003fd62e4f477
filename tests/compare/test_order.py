"""The order effects measured from comparison_block records (synthetic records with a known effect)."""

from __future__ import annotations

import importlib.util
import math
import sys
from typing import Any

import numpy as np
import pytest

from pytest_llmbench.compare.interleave import round_order, start_first

from .test_plan import ROOT


def _lab() -> Any:
    """experiments/compare/order_lab.py: lab-only since issue 54 (used by compare_pytest_sessions.py)."""
    spec = importlib.util.spec_from_file_location("order_lab", ROOT / "experiments" / "compare" / "order_lab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


order_effect = _lab().order_effect


def _blocks(units: int, start_bonus: float, play_bonus: float, noise: float = 0.002, seed: int = 0) -> list[dict]:
    """An A/A whose arm that started first is ``start_bonus`` faster for its unit, and whose arm that plays
    first in a round ``play_bonus`` faster in that round: the records a session writes."""
    rng = np.random.default_rng(seed)
    out = []
    for u in range(units):
        first_start = start_first(u)
        for r in (2 * u, 2 * u + 1):
            first_play = round_order(r)[0]
            for role in ("reference", "candidate"):
                speed = 100.0 * math.exp(noise * rng.standard_normal())
                speed *= (1 + start_bonus) if role == first_start else 1.0
                speed *= (1 + play_bonus) if role == first_play else 1.0
                out.append(
                    {
                        "record": "comparison_block",
                        "compare_session": "s",
                        "nodeid": "t",
                        "scenario": "chat",
                        "round": r,
                        "unit": u,
                        "role": role,
                        "warmup": False,
                        "first_in_round": first_play,
                        "started_first": first_start,
                        "metrics": {"output_throughput": speed},
                    }
                )
    return out


def test_a_start_order_effect_is_measured_and_a_play_order_effect_apart_from_it():
    blocks = _blocks(16, start_bonus=0.02, play_bonus=0.0)
    start = order_effect(blocks, "output_throughput", "started_first")
    assert start is not None and start.candidate_first == start.reference_first == 8
    assert start.ratio == pytest.approx(1.02**2, rel=2e-3) and start.ci_low > 1.03 and start.p_value < 1e-6
    assert start.per_arm == pytest.approx(1.02, rel=1e-3) and "started first" in start.describe()
    play = order_effect(blocks, "output_throughput", "first_in_round")
    assert play is not None and play.ci_low < 1.0 < play.ci_high  # ABBA/BAAB: no play effect here


def test_a_play_order_effect_cancels_in_the_units_but_is_measured_per_round():
    blocks = _blocks(16, start_bonus=0.0, play_bonus=0.03)
    play = order_effect(blocks, "output_throughput", "first_in_round")
    assert play is not None and play.ratio == pytest.approx(1.03**2, rel=2e-3)
    start = order_effect(blocks, "output_throughput", "started_first")
    assert start is not None and start.ci_low < 1.0 < start.ci_high


def test_too_few_groups_or_an_unknown_order():
    assert order_effect(_blocks(2, 0.0, 0.0), "output_throughput", "started_first") is None
    assert order_effect([b for b in _blocks(4, 0, 0) if b["round"] < 0], "output_throughput", "first_in_round") is None
    with pytest.raises(ValueError, match="order must be one of"):
        order_effect([], "output_throughput", "who_knows")
