"""The nested pilot's two SDs (compare/nested.py): a fresh pair's offset and a round's noise."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_llmbench.compare.nested import components, units_of


def test_components_recover_known_sds_on_simulated_nested_data():
    rng = np.random.default_rng(7)
    sd_b, sd_w, units, rounds = 0.01, 0.035, 400, 8
    y = sd_b * rng.standard_normal((units, 1)) + sd_w * rng.standard_normal((units, rounds))
    c = components(list(y))
    assert c.df_between == units - 1 and c.df_within == units * (rounds - 1)
    assert c.sd_within == pytest.approx(sd_w, rel=0.03)
    assert c.sd_between == pytest.approx(sd_b, rel=0.25)


def test_components_clip_a_negative_between_estimate_at_zero_and_take_unbalanced_units():
    rng = np.random.default_rng(3)
    y = [0.03 * rng.standard_normal(k) for k in (2, 4, 6, 8, 3, 5)]
    values = [list(u) for u in y]
    flat = components([[v - np.mean(u) for v in u] for u in values])  # unit means all 0: MSB = 0
    assert flat.sd_between == 0.0
    assert components(values).df_within == sum(map(len, values)) - len(values)
    with pytest.raises(ValueError, match=">= 2 units"):
        components([[0.1, 0.2]])
    with pytest.raises(ValueError, match="within-unit spread"):
        components([[0.1], [0.2]])


def test_units_of_groups_consecutive_rounds_as_the_runner_does():
    assert units_of([1.0, 2.0, 3.0, 4.0, 5.0], 2) == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="unit_rounds"):
        units_of([1.0], 0)
