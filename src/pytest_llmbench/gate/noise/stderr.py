"""Standard error: both sides are means of per-sample values (accept length per prompt, TTFT per request)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_llmbench.gate.noise.base import NoiseModel, NoiseModelError
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Verdict, fmt
from pytest_llmbench.gate.verdict import threshold_rule


@dataclass(frozen=True)
class StdErr(NoiseModel):
    """Fail when the difference exceeds ``k·√(SE_base² + SE_new²)``.

    With ``alpha`` set, ``k`` is instead the one-sided Student-t quantile for the Welch–Satterthwaite
    degrees of freedom, which matters at the seeds' small samples (12 prompts). The p-value is Welch's
    one-sided t test (the normal tail when a side's n is unknown).

    When one side has no SE (a single number, or an old baseline), the per-sample SD is assumed the
    same on both sides, so the missing SE is the known one scaled by √(n_known / n_missing): one run
    against a 32-prompt mean has √32 times the baseline's SE, not the same SE.
    """

    k: float = 2.0
    alpha: float | None = None
    name = "StdErr"

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        se_b, se_n = baseline.se, observed.se
        n_b, n_n = baseline.n, observed.n
        if se_n is None and se_b is None:
            raise NoiseModelError(
                "StdErr needs a standard error: pass per-sample values (a list) or se= to bench.check"
            )
        note = ""
        if se_n is None:
            se_n, n_n, note = _scaled(se_b, n_b, n_n, "observed", "baseline")  # type: ignore[arg-type]
        elif se_b is None:
            se_b, n_b, note = _scaled(se_n, n_n, n_b, "baseline", "observed")
        df = _welch_df(se_b, se_n, n_b, n_n)  # type: ignore[arg-type]
        k, label = self._k(df)
        se = float(np.hypot(se_b, se_n))  # type: ignore[arg-type]
        tolerance = k * se
        worse_by = baseline.value - observed.value if direction == "higher" else observed.value - baseline.value
        p = _p_worse(worse_by, se, df)
        how = f"{k:.3g}·√({fmt(se_b)}²+{fmt(se_n)}²)"
        return self._verdict(
            baseline.value,
            observed,
            tolerance,
            threshold_rule(label, baseline.value, tolerance, direction, how) + note,
            direction,
            p_value=p,
        )

    def _k(self, df: float | None) -> tuple[float, str]:
        if self.alpha is None:
            return self.k, f"StdErr k={self.k:g}"
        if df is not None:
            return float(stats.t.ppf(1 - self.alpha, df)), f"StdErr alpha={self.alpha:g} (t, df={df:.1f})"
        return float(stats.norm.ppf(1 - self.alpha)), f"StdErr alpha={self.alpha:g} (normal)"


def _scaled(
    se_known: float, n_known: int | None, n_missing: int | None, missing: str, known: str
) -> tuple[float, int, str]:
    """The missing side's SE from the known side's, assuming the same per-sample SD."""
    if n_known is None:
        raise NoiseModelError(
            f"StdErr: the {missing} SE is unknown and the {known} has no n to scale its SE by; pass "
            f"per-sample values (a list) or se= to bench.check, or re-record the baseline"
        )
    n_m = n_missing or 1  # a single number without n is one sample
    se = se_known * math.sqrt(n_known / n_m)
    return se, n_m, f" ({missing} SE unknown: {known}'s SE·√({n_known}/{n_m}) used)"


def _welch_df(se_b: float, se_n: float, n_b: int | None, n_n: int | None) -> float | None:
    """Welch–Satterthwaite degrees of freedom; None when a side's n is unknown or both SEs are 0."""
    if not (n_b and n_n and n_b > 1 and n_n > 1 and (se_b > 0 or se_n > 0)):
        if n_b and n_n and (n_b > 1 or n_n > 1) and (se_b > 0 or se_n > 0):
            return float(max(n_b, n_n) - 1)  # one side is a single sample: its SE came from the other side
        return None
    return (se_b**2 + se_n**2) ** 2 / (se_b**4 / (n_b - 1) + se_n**4 / (n_n - 1))


def _p_worse(worse_by: float, se: float, df: float | None) -> float:
    """One-sided p that the new value is worse: Welch's t (normal without df); 0/1 when both SEs are 0."""
    if se == 0:
        return 0.0 if worse_by > 0 else 1.0
    z = worse_by / se
    return float(stats.t.sf(z, df)) if df is not None else float(stats.norm.sf(z))
