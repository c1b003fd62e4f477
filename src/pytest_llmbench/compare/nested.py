"""How much noise lives between server starts: the nested pilot's two SDs (one-way random effects).

Why its own module: the running comparison (compare/spend.py, for the pilot's record) and the dry run
(compare/dryrun.py, from a recorded session) both estimate them, and neither should import the other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_llmbench.compare.plan import Noise


@dataclass(frozen=True)
class Components:
    """The nested model's SDs as a pilot measured them, with their degrees of freedom."""

    sd_between: float
    sd_within: float
    df_between: int  # units - 1
    df_within: int  # rounds - units

    @property
    def noise(self) -> Noise:
        return Noise(self.sd_between, self.sd_within)


def components(units: Sequence[Sequence[float]]) -> Components:
    """One-way random-effects ANOVA by the method of moments (Searle, Casella & McCulloch, *Variance
    Components*, ch. 3). ``units`` holds each fresh pair's per-round values (log ratios); sd_within² is the
    mean square within units, sd_between² = (MSB - MSW) / n0 clipped at 0 (n0 the effective rounds per
    unit: the rounds, when the units are balanced)."""
    groups = [np.asarray(u, dtype=float) for u in units]
    if len(groups) < 2:
        raise ValueError(f"components: need >= 2 units, got {len(groups)}")
    if any(g.ndim != 1 or g.size < 1 for g in groups):
        raise ValueError("components: every unit needs a 1-d sequence of >= 1 round values")
    if any(not np.all(np.isfinite(g)) for g in groups):
        raise ValueError("components: round values must be finite")
    sizes = np.array([g.size for g in groups], dtype=float)
    total, k = float(sizes.sum()), len(groups)
    if total - k < 1:
        raise ValueError("components: need at least one unit with >= 2 rounds (no within-unit spread otherwise)")
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    msw = float(sum(((g - g.mean()) ** 2).sum() for g in groups)) / (total - k)
    msb = float((sizes * (means - grand) ** 2).sum()) / (k - 1)
    n0 = (total - float((sizes**2).sum()) / total) / (k - 1)
    between = max(0.0, (msb - msw) / n0)
    return Components(math.sqrt(between), math.sqrt(msw), k - 1, int(total) - k)


def units_of(values: Sequence[float], unit_rounds: int) -> list[list[float]]:
    """Consecutive rounds grouped into units of ``unit_rounds`` (a last partial unit is dropped), as the
    runner groups them (``Rounds.unit_of``)."""
    if unit_rounds < 1:
        raise ValueError(f"units_of: unit_rounds must be >= 1, got {unit_rounds}")
    whole = len(values) - len(values) % unit_rounds
    return [list(values[i : i + unit_rounds]) for i in range(0, whole, unit_rounds)]
