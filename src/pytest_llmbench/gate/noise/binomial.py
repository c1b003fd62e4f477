"""Two proportions: a count of passes (or failures) out of n cases, compared with Fisher's exact test.

Exact rather than a normal approximation because quality counts sit near the ceiling (GSM8K ~97%),
where the z-test's false-alarm rate drifts from its nominal alpha.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from pytest_llmbench.gate.noise.base import NoiseModel, NoiseModelError
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Status, Verdict, fmt


def _p_worse(k_b: int, n_b: int, k: int, n: int, direction: Direction) -> float:
    """One-sided p-value that the new proportion is worse than the baseline's."""
    alternative: Literal["greater", "less"] = "greater" if direction == "higher" else "less"
    table = np.array([[k_b, n_b - k_b], [k, n - k]], dtype=np.int64)
    return float(stats.fisher_exact(table, alternative=alternative).pvalue)


def _p_better(k_b: int, n_b: int, k: int, n: int, direction: Direction) -> float:
    return _p_worse(k_b, n_b, k, n, "lower" if direction == "higher" else "higher")


@dataclass(frozen=True)
class Binomial(NoiseModel):
    """Fail when Fisher's one-sided exact test says the new proportion is worse at level ``alpha``."""

    alpha: float = 0.01
    name = "Binomial"

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        k_b, n_b = _count(baseline.value, baseline.n, "baseline")
        k, n = _count(observed.value, observed.n, "observed")
        expected = k_b * n / n_b  # the baseline's rate on the new number of cases
        crit = self._critical(k_b, n_b, n, direction)
        status: Status
        p = _p_worse(k_b, n_b, k, n, direction)
        if p < self.alpha:
            status = "REGRESSED"
        elif _p_better(k_b, n_b, k, n, direction) < self.alpha:
            status = "improved"
        else:
            status = "pass"
        head = f"Binomial alpha={self.alpha:g} (Fisher exact, one-sided, vs {k_b}/{n_b})"
        if crit is None:
            tolerance = float(n)
            rule = f"{head}: no count of {n} cases can fail — too few cases to detect a drop"
        elif direction == "higher":
            tolerance = expected - (crit + 1)
            rule = f"{head}: fail if observed ≤ {crit} of {n}"
        else:
            tolerance = (crit - 1) - expected
            rule = f"{head}: fail if observed ≥ {crit} of {n}"
        return self._verdict(expected, observed, tolerance, rule, direction, status, p_value=p)

    def _critical(self, k_b: int, n_b: int, n: int, direction: Direction) -> int | None:
        """The least-bad count that still regresses (p < alpha); p is monotone in k, so bisect."""
        if direction == "higher":
            if _p_worse(k_b, n_b, 0, n, direction) >= self.alpha:
                return None
            lo, hi = 0, n  # invariant: lo regresses; find the largest such k
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if _p_worse(k_b, n_b, mid, n, direction) < self.alpha:
                    lo = mid
                else:
                    hi = mid - 1
            return lo
        if _p_worse(k_b, n_b, n, n, direction) >= self.alpha:
            return None
        lo, hi = 0, n  # invariant: hi regresses; find the smallest such k
        while lo < hi:
            mid = (lo + hi) // 2
            if _p_worse(k_b, n_b, mid, n, direction) < self.alpha:
                hi = mid
            else:
                lo = mid + 1
        return hi


def _count(value: float, n: int | None, which: str) -> tuple[int, int]:
    if n is None or n <= 0:
        raise NoiseModelError(f"Binomial needs the number of cases: pass n= to bench.check ({which} has none)")
    k = round(value)
    if k != value or not 0 <= k <= n:
        raise NoiseModelError(f"Binomial needs a whole count between 0 and n={n}; {which} is {fmt(value)}")
    return k, int(n)
