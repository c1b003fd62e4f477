"""The mean of paired per-case differences, Σdiff / Σcount over clusters, with one-sided bounds that hold
their level at few clusters, or a refusal where nothing can.

Cases of one cluster (the questions about one state) are not independent, so every method here treats a
cluster as the unit. The percentile bootstrap this replaces was liberal when the clusters were few: at
alpha 1% it called an exactly-ignore change regressed 5.1% of the time over 5 clusters, 2.4% over 10,
1.8% over 20 (issue 55; experiments/stats/audit_comparisons.out.md). A t on the clusters fixed that for
symmetric differences but not for skewed ones (log loss, a few large gains): 7.2% over 5 clusters, 6.1%
over 10, 4.7% over 20 at alpha 1%, and no check of the sample's skewness at that n tells those runs apart
(a mean test of a skewed population has no valid small-sample form). So:

- fewer than ``min_clusters`` clusters: refused (:class:`TooFewClusters`, its message says what to use).
  The verdicts (compare/stats.py ``compare_decisions``, gate/noise/paired.py ``PairedBootstrap``) ask for
  ``SKEW_SAFE_FROM`` (30); a reported interval may ask for ``MIN_CLUSTERS`` (4, 3 degrees of freedom);
- fewer than ``BOOTSTRAP_FROM``: a t with ``clusters − 1`` df on the ratio estimator's cluster-robust
  standard error (the linearized residuals ``sum_i − estimate·count_i``; with one case per cluster it is
  the paired t);
- from ``BOOTSTRAP_FROM`` on: the studentized bootstrap (bootstrap-t) of the same statistic, clusters
  resampled whole, which is second-order accurate where the percentile bootstrap is first-order.

Clusters that all moved alike (no spread) give the point as their interval at any count from
``MIN_CLUSTERS``: there is no distribution to get wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

FloatArray = npt.NDArray[np.float64]

MIN_CLUSTERS = 4  # 3 degrees of freedom, the floor compare/stats.py's t-based verdicts stand on
BOOTSTRAP_FROM = 30  # fewer clusters: the cluster t; more: the studentized bootstrap
SKEW_SAFE_FROM = BOOTSTRAP_FROM  # the fewest clusters a verdict is taken on (skewed data: see above)
SKEWED_ADVICE = (
    "too few units for a bootstrap on skewed data (a t or bootstrap over fewer than {need} clusters calls an "
    "exactly-ignore change regressed up to 7% of the time at alpha 1% on skewed scores); use at least {need} "
    "questions (clusters), or noise=PairedT where the per-case differences are known to be symmetric"
)
RESAMPLES = 9999
_CHUNK = 2_000_000  # resampled values held at once (resamples × clusters)


class TooFewClusters(ValueError):
    """Fewer clusters than any method here judges honestly."""


@dataclass(frozen=True)
class ClusterMean:
    """Σdiff / Σcount, its cluster-robust standard error, and how its bounds are taken."""

    estimate: float
    se: float
    clusters: int
    cases: int
    df: float  # the t's degrees of freedom (clusters − 1); inf for the bootstrap
    t_star: FloatArray | None = None  # the bootstrap's studentized resamples, sorted (None: the t)

    def describe(self, what: str = "cases") -> str:
        """How it was judged, for a method or rule text: ``what`` names the cases (questions, prompts)."""
        where = f"{self.cases} {what}" + (f" in {self.clusters} clusters" if self.clusters != self.cases else "")
        if self.t_star is None:
            return f"cluster t ({self.clusters - 1} df) over {where}"
        return f"studentized bootstrap ({self.t_star.size} resamples) over {where}"

    def resolves(self, level: float) -> bool:
        """Can a one-sided bound at ``level`` be read (a bootstrap resolves no tail below ~10 resamples)?"""
        return self.t_star is None or level * self.t_star.size >= 10

    def _quantile(self, q: float) -> float:
        if self.t_star is None:
            return float(stats.t.ppf(q, self.df))
        return float(np.quantile(self.t_star, q, method="inverted_cdf"))  # no interpolation over ±inf

    def bounds(self, level: float) -> tuple[float, float]:
        """The one-sided lower and upper bounds, each at ``level`` (0.025 each: the 95% interval)."""
        if self.se == 0:
            return self.estimate, self.estimate
        return (
            self.estimate - self._quantile(1 - level) * self.se,
            self.estimate - self._quantile(level) * self.se,
        )

    def p_below(self, value: float) -> float:
        """The one-sided p of "the mean is below ``value``" (small when the data say it is)."""
        if self.se == 0:
            return 0.0 if self.estimate < value else 1.0
        t = (self.estimate - value) / self.se
        if self.t_star is None:
            return float(stats.t.cdf(t, self.df))
        return float((1 + np.sum(self.t_star <= t)) / (self.t_star.size + 1))

    def p_above(self, value: float) -> float:
        """The one-sided p of "the mean is above ``value``"."""
        if self.se == 0:
            return 0.0 if self.estimate > value else 1.0
        t = (self.estimate - value) / self.se
        if self.t_star is None:
            return float(stats.t.sf(t, self.df))
        return float((1 + np.sum(self.t_star >= t)) / (self.t_star.size + 1))


def _robust_se(sums: FloatArray, counts: FloatArray, estimate: FloatArray, axis: int = -1) -> FloatArray:
    """The ratio estimator's cluster-robust SE (CR1): sqrt(k/(k−1)·Σ(sum − est·count)²) / Σcount."""
    k = sums.shape[axis]
    est = np.expand_dims(estimate, axis)
    resid = sums - est * counts
    out: FloatArray = np.sqrt(k / (k - 1) * np.sum(resid**2, axis=axis)) / np.sum(counts, axis=axis)
    return out


def cluster_mean(
    sums: FloatArray | list[float],
    counts: FloatArray | list[float],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    bootstrap_from: int = BOOTSTRAP_FROM,
    min_clusters: int = MIN_CLUSTERS,
) -> ClusterMean:
    """Σsums / Σcounts over clusters (each cluster's sum of differences and its number of cases); refused
    below ``min_clusters`` (a verdict passes ``SKEW_SAFE_FROM``) unless the clusters have no spread."""
    s, c = np.asarray(sums, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    if s.ndim != 1 or s.shape != c.shape or np.any(c <= 0):
        raise ValueError(f"per-cluster sums and positive counts of one length needed, got {s.shape}, {c.shape}")
    k = s.size
    if k < MIN_CLUSTERS:
        raise TooFewClusters(
            f"{k} cluster(s) of paired cases; a paired interval needs at least {MIN_CLUSTERS} "
            f"({MIN_CLUSTERS - 1} degrees of freedom)"
        )
    estimate = float(s.sum() / c.sum())
    se = float(_robust_se(s, c, np.asarray(estimate)))
    cases = int(c.sum())
    if k < min_clusters and se != 0:
        raise TooFewClusters(f"{k} clusters of paired cases: " + SKEWED_ADVICE.format(need=min_clusters))
    if se == 0 or not math.isfinite(se) or k < bootstrap_from:
        return ClusterMean(estimate, se, k, cases, float(k - 1))
    rng = np.random.default_rng(seed)
    t_star = np.empty(resamples)
    step = max(1, _CHUNK // k)
    for start in range(0, resamples, step):
        idx = rng.integers(0, k, size=(min(step, resamples - start), k))
        bs, bc = s[idx], c[idx]
        est = bs.sum(axis=1) / bc.sum(axis=1)
        bse = _robust_se(bs, bc, est, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (est - estimate) / bse
        # a resample whose clusters all moved alike has no spread: its t is ±inf (or 0 at the estimate)
        t[bse == 0] = np.sign(est[bse == 0] - estimate) * np.inf
        t[np.isnan(t)] = 0.0
        t_star[start : start + t.size] = t
    t_star.sort()
    return ClusterMean(estimate, se, k, cases, math.inf, t_star)
