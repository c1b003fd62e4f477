"""Lab functions of the comparison's planner: used by tests and the simulations here, never by a session.

Moved out of src/pytest_llmbench/compare/plan.py (issue 54 §3): a module of the package holds what a
session runs; what explains the design (the classic allocation, the bias a shared offset would bring, what a
budget buys) lives beside the simulations that cite it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from pytest_llmbench.compare.plan import MAX_UNITS, Costs, Noise, Target, _units_needed, best_within


def units_needed(unit_rounds: int, noise: Noise, target: Target, max_units: int = MAX_UNITS) -> int | None:
    """The fewest units (at least ``target.min_units``) reaching the target at ``unit_rounds`` rounds per
    unit; None beyond ``max_units``."""
    return _units_needed([unit_rounds], noise, target, max_units)[0]


def optimal_unit_rounds(costs: Costs, noise: Noise) -> float:
    """The classic allocation m* = sqrt(C_unit * sd_within² / (c_round * sd_between²)), large-sample (z)
    and continuous: the start of the exact search. Infinite when the offset is 0 (no reason to restart)."""
    if noise.sd_between == 0:
        return math.inf
    return math.sqrt(costs.unit_overhead_s * noise.sd_within**2 / (costs.round_s * noise.sd_between**2))


def detectable_in(budget_s: float, costs: Costs, noise: Noise, target: Target) -> float:
    """The smallest detectable change a budget buys (the sizes' unit; inf if it cannot judge)."""
    return best_within("", budget_s, costs, noise, target).detectable


# --- the bias of a shared offset ---------------------------------------------------------------------


def shared_offset_false_alarm(
    shared_sd: float, unit_sd: float, units: int, target: Target, *, nodes: int = 80
) -> float:
    """The rate of "regressed" at a true change of exactly ``ignore`` when every unit shares one offset of
    SD ``shared_sd`` that the units' spread (``unit_sd``, the rest of each unit's noise) cannot see: both
    arms kept up for the scenario (the round as the unit, shared SD = sd_between) or one arm kept up
    (shared SD = sd_between / sqrt 2). alpha when the shared SD is 0; grows with ``units``. Exact: the
    noncentral t integrated over the offset (Gauss-Hermite)."""
    if units < 2:
        raise ValueError(f"shared_offset_false_alarm: need >= 2 units, got {units}")
    df = units - 1
    crit = float(stats.t.isf(target.alpha, df))
    if shared_sd == 0:
        return target.alpha
    x, w = np.polynomial.hermite_e.hermegauss(nodes)  # E[f(Z)] = sum w f(x) / sqrt(2 pi)
    ncp = x * shared_sd * math.sqrt(units) / unit_sd
    return float(np.sum(w * stats.nct.sf(crit, df, ncp)) / math.sqrt(2 * math.pi))
