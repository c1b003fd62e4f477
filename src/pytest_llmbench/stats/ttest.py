"""One-sample t tests of a mean of paired per-unit differences, and the rule that needs several to agree.

The comparisons (compare/stats.py) and the stored gate's ``PairedT`` (gate/noise/paired.py) judge a mean
of per-unit differences with these tests; each is written here once:

- :func:`iid_t`: the SD of the units and ``n − 1`` df (the paired t);
- :func:`stein_t`: a pilot's SD and df over all ``n`` units (Stein's two-stage t);
- :func:`hac_t`: a serial-dependence-robust SE over units in play order (see below);
- :func:`lag1_t`: the lag-1 check's AR(1) widening, where :func:`dependence` flags the units.

:class:`Intersection` decides only where every test it holds rejects (an intersection–union test): every
bound is the widest, every p the largest, so adding a test can only widen an interval, never narrow it.

**Why a HAC test** (issue 55): a candidate whose speed relative to the reference drifts slowly from unit to
unit (AR(1), φ 0.7, SD 0.5% under 2% unit noise) makes the units dependent; the mean's true variance is
then 27% above what their SD says, and "regressed at exactly ignore" rose to 1.5% at alpha 1%. At ~25 units
that drift moves the lag-1 autocorrelation by 0.04 against its sampling SD of 0.2, so no check sees it,
and only a test that always allows for some dependence bounds it. The Newey–West (Bartlett) estimate of
the long-run variance is that test, with two small-sample corrections: its quadratic form is divided by
its expectation under independence (``tr(MWM)``, M the centring matrix, W the Bartlett weights), so it is
unbiased where the units are independent, and its t takes the Satterthwaite df ``tr(MWM)² / tr((MWM)²)``,
so that under independent normal units the test is close to exact rather than liberal. Lags: the
Newey–West rule ``⌊4 (n/100)^(2/9)⌋`` (one more lag gave the same rates at ignore for 17% more units;
the textbook max(iid SE, HAC SE) on n − 1 df left the drifting model at 1.36%:
experiments/stats/dependence_se.out.md). The guard costs power under independent units, which the planner
buys back with more units (compare/stats.py ``DEPENDENCE_LEVEL``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

FloatArray = npt.NDArray[np.float64]

#: Serial dependence across units is checked (lag-1 flag, HAC test) from this many units on.
DEPENDENCE_MIN_UNITS = 8
DEPENDENCE_LEVEL = 0.01  # the lag-1 check flags independent units this often (one-sided)
#: The HAC t from this many units on (the default pilot): its df are 5.3 at 12 units, 3.5 at 8. From 16 on
#: instead, the drifting model stayed at 1.19% at ignore: comparisons planned at 12–15 units (a pilot that
#: read the SD low) carry much of its false rate (experiments/stats/dependence_se.out.md).
HAC_MIN_UNITS = 12


@dataclass(frozen=True)
class TTest:
    """One t test of a mean: its standard error and df; ``name`` says which (for a method text)."""

    se: float
    df: float
    name: str = "t"

    def half(self, level: float) -> float:
        """The one-sided half-width at ``level`` (0.025: half the 95% interval)."""
        return float(stats.t.isf(level, self.df)) * self.se if self.se > 0 else 0.0

    def p_below(self, mean: float, value: float) -> float:
        """One-sided p of "the true mean is at or above ``value``" (small: the data say it is below)."""
        if self.se == 0:
            return 0.0 if mean < value else 1.0
        return float(stats.t.cdf((mean - value) / self.se, self.df))

    def p_above(self, mean: float, value: float) -> float:
        """One-sided p of "the true mean is at or below ``value``"."""
        if self.se == 0:
            return 0.0 if mean > value else 1.0
        return float(stats.t.sf((mean - value) / self.se, self.df))


def iid_t(d: FloatArray) -> TTest | None:
    """The paired t on the units' own SD (None below 2 units)."""
    n = d.size
    if n < 2:
        return None
    return TTest(float(np.std(d, ddof=1)) / math.sqrt(n), float(n - 1), "t")


def stein_t(sd: float, df: int, n: int) -> TTest:
    """Stein's second-stage t: a pilot's SD per unit and its df, over all ``n`` units."""
    return TTest(sd / math.sqrt(n), float(df), "Stein")


def hac_lags(n: int) -> int:
    """The Bartlett kernel's lags over ``n`` units: the Newey–West rule, at least 1, at most n − 2."""
    return max(1, min(n - 2, math.floor(4 * (n / 100) ** (2 / 9))))


@functools.lru_cache(maxsize=512)
def bartlett_form(n: int, lags: int) -> tuple[FloatArray, float]:
    """MWM / tr(MWM) (so xᵀ·it·x is unbiased for the variance of independent units) and its Satterthwaite df."""
    lag = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    w = np.clip(1.0 - lag / (lags + 1), 0.0, None)
    m = np.eye(n) - 1.0 / n
    a = m @ w @ m
    trace = float(np.trace(a))
    return a / trace, trace * trace / float(np.sum(a * a))


def hac_t(d: FloatArray) -> TTest | None:
    """The serial-dependence-robust t over units in play order (module docstring); None below
    ``HAC_MIN_UNITS`` units."""
    n = d.size
    if n < HAC_MIN_UNITS:
        return None
    form, df = bartlett_form(n, hac_lags(n))
    variance = max(0.0, float(d @ form @ d))
    return TTest(math.sqrt(variance / n), df, f"Newey–West, {hac_lags(n)} lags")


@dataclass(frozen=True)
class Dependence:
    """Serial dependence of the units in play order: the lag-1 autocorrelation and whether it is beyond
    what independent units show at ``DEPENDENCE_LEVEL`` (one-sided)."""

    r1: float
    z: float

    @property
    def flagged(self) -> bool:
        return self.z > float(stats.norm.isf(DEPENDENCE_LEVEL))

    @property
    def inflation(self) -> float:
        """The SE factor of an AR(1) mean with this lag-1 correlation: sqrt((1 + r) / (1 − r))."""
        r = min(max(self.r1, 0.0), 0.9)
        return math.sqrt((1 + r) / (1 - r))


def dependence(d: FloatArray) -> Dependence | None:
    """The lag-1 autocorrelation of ``d`` (units in play order) and its z against independence (mean
    −1/n, SD 1/√n); None below ``DEPENDENCE_MIN_UNITS``."""
    n = d.size
    x = d - d.mean()
    ss = float(np.sum(x * x))
    if n < DEPENDENCE_MIN_UNITS or ss == 0:
        return None
    r1 = float(np.sum(x[1:] * x[:-1])) / ss
    return Dependence(r1, (r1 + 1 / n) * math.sqrt(n))


def lag1_t(own: TTest, dep: Dependence, n: int) -> TTest:
    """The own t widened for AR(1) dependence with the flagged lag-1 correlation, df cut to the
    effective units."""
    k = dep.inflation
    return TTest(own.se * k, max(1.0, n / (k * k) - 1), "lag-1")


@dataclass(frozen=True)
class Intersection:
    """Tests of one mean that must all reject (an intersection–union test): the widest bound, the
    largest p. Tests with no spread are left out of the p-values and bounds unless all have none."""

    mean: float
    tests: Sequence[TTest]

    @property
    def estimate(self) -> float:
        """The point (stats/verdicts.py ``Estimate``)."""
        return self.mean

    @property
    def live(self) -> list[TTest]:
        return [t for t in self.tests if t.se > 0] or list(self.tests)

    def binding(self, level: float) -> TTest:
        """The test whose bound at ``level`` is the widest (its SE and df are the comparison's)."""
        return max(self.tests, key=lambda t: t.half(level))

    def bounds(self, level: float) -> tuple[float, float]:
        """One-sided lower and upper bounds, each at ``level``."""
        half = max(t.half(level) for t in self.live)
        return self.mean - half, self.mean + half

    def p_below(self, value: float) -> float:
        return max(t.p_below(self.mean, value) for t in self.live)

    def p_above(self, value: float) -> float:
        return max(t.p_above(self.mean, value) for t in self.live)
