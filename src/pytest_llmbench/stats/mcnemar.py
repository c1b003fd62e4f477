"""Exact McNemar: pass/fail per case, paired, judged on the cases the two runs disagree on.

Of the ``changed`` (discordant) cases, the count that got worse is Binomial(changed, ½) when nothing
changed; cases that pass (or fail) in both runs carry no information. The stored gate's ``McNemar``
(gate/noise/paired.py) tests against no change; a comparison (compare/stats.py ``compare_pass_fail``) also
tests against a nonzero size on the pass-rate difference ψ·(1 − 2θ), which needs ψ (the share of
discordant cases) bounded as well (:func:`pass_rate_gap`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy import stats


def discordant_p(k: int, changed: int) -> float:
    """P(at least ``k`` of ``changed`` discordant cases go one way | both ways equally likely)."""
    if changed == 0:
        return 1.0
    return float(stats.binomtest(k, changed, 0.5, alternative="greater").pvalue)


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact one-sided bounds (each at ``alpha``) for a binomial proportion: the beta quantiles that
    ``binomtest(k, n).proportion_ci(1 - 2·alpha)`` returns, without its per-call cost."""
    low = 0.0 if k == 0 else float(stats.beta.isf(1 - alpha, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))
    return low, high


def pass_rate_gap(lost: int, won: int, n: int, alpha: float, boxed: bool) -> tuple[float, float]:
    """One-sided bounds at ``alpha`` for the pass-rate difference ψ·(1 − 2θ) over the exact box of ψ (share
    of discordant cases) and θ (share of those the candidate lost): alpha/2 on each, as the extremes of a
    bilinear function lie at the box's corners. Against 0 only the sign matters, which θ alone decides, so
    θ gets the whole alpha (the textbook exact McNemar test): ``boxed=False``."""
    disc = lost + won
    a_theta = alpha / 2 if boxed else alpha
    theta_lo, theta_hi = clopper_pearson(lost, disc, a_theta) if disc else (0.0, 1.0)
    psi_lo, psi_hi = clopper_pearson(disc, n, alpha / 2) if boxed else (disc / n, disc / n)
    corners_low = (psi_lo * (1 - 2 * theta_hi), psi_hi * (1 - 2 * theta_hi))
    corners_high = (psi_lo * (1 - 2 * theta_lo), psi_hi * (1 - 2 * theta_lo))
    return min(corners_low), max(corners_high)


def smallest_alpha(rejects: Callable[[float], bool]) -> float:
    """The smallest level at which ``rejects(level)`` holds (monotone in the level), 1 if none below 0.5:
    the p-value of a test known only through its bounds."""
    top, floor = 0.5 - 1e-9, 1e-15
    if not rejects(top):
        return 1.0
    if rejects(floor):
        return floor
    low, high = floor, top
    for _ in range(60):  # bisection on a log scale: 1e-15..0.5 to a relative 1e-6
        mid = math.sqrt(low * high)
        low, high = (low, mid) if rejects(mid) else (mid, high)
    return high
