"""Standard error: both sides are means of per-sample values (accept length per prompt, TTFT per request)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_llmbench.gate.entry import BaselineEntry
from pytest_llmbench.gate.metric import Observation
from pytest_llmbench.gate.noise.base import NoiseModel, NoiseModelError
from pytest_llmbench.gate.verdict import Direction, Verdict, fmt, threshold_rule


@dataclass(frozen=True)
class StdErr(NoiseModel):
    """Fail when the difference exceeds ``k·√(SE_base² + SE_new²)``.

    With ``alpha`` set, ``k`` is instead the one-sided Student-t quantile for the Welch–Satterthwaite
    degrees of freedom, which matters at the seeds' small samples (12 prompts).
    """

    k: float = 2.0
    alpha: float | None = None
    name = "StdErr"

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        se_b, se_n = baseline.se, observed.se
        if se_n is None and se_b is None:
            raise NoiseModelError(
                "StdErr needs a standard error: pass per-sample values (a list) or se= to bench.check"
            )
        note = ""
        if se_n is None:
            se_n, note = se_b, " (observed SE unknown: baseline's used)"
        elif se_b is None:
            se_b, note = se_n, " (baseline SE unknown: observed SE used)"
        k, label = self._k(se_b, se_n, baseline.n, observed.n)
        tolerance = k * float(np.hypot(se_b, se_n))
        how = f"{k:.3g}·√({fmt(se_b)}²+{fmt(se_n)}²)"
        return self._verdict(baseline.value, observed, tolerance,
                             threshold_rule(label, baseline.value, tolerance, direction, how) + note, direction)

    def _k(self, se_b: float, se_n: float, n_b: int | None, n_n: int | None) -> tuple[float, str]:
        if self.alpha is None:
            return self.k, f"StdErr k={self.k:g}"
        if n_b and n_n and n_b > 1 and n_n > 1 and (se_b > 0 or se_n > 0):
            df = (se_b**2 + se_n**2) ** 2 / (se_b**4 / (n_b - 1) + se_n**4 / (n_n - 1))
            return float(stats.t.ppf(1 - self.alpha, df)), f"StdErr alpha={self.alpha:g} (t, df={df:.1f})"
        return float(stats.norm.ppf(1 - self.alpha)), f"StdErr alpha={self.alpha:g} (normal)"
