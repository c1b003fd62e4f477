"""Adding rounds until every metric is decided, without spending more than the stated alpha.

Each look judges the comparisons at its own alpha; the per-look alphas are the increments of a Lan–DeMets
spending function of the information fraction ``look / max_looks`` and sum to the plan's alpha. Applied
as a Bonferroni split over looks (not the exact group-sequential boundaries), so the bound holds whatever
the test (t on few rounds, exact McNemar, bootstrap) and however the looks are correlated: a wrong
``regressed`` (or a wrong ``equivalent``) at any look has probability at most Σ alpha_k = alpha.

O'Brien–Fleming-type spending is the default: it spends almost nothing on the first looks, where a t on
two or three rounds is fragile anyway, and keeps most of alpha for the last look, so a run that needs every
round loses little to the repeated looks. ``benches/perf/simulate_comparisons.out.md`` compares it with
Pocock-type spending and with a fixed number of rounds.

A decided verdict is kept (:class:`Tracker`): a later look cannot turn it back into ``inconclusive``. The
p-value carried to the suite's Holm step is the look-adjusted ``min_k p_k · alpha / alpha_k``, which is a
valid p-value over all looks by the same Bonferroni argument.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from scipy import stats

from pytest_llmbench.compare.stats import Comparison

SPENDING = ("obrien-fleming", "pocock")


def spent(alpha: float, fraction: float, spending: str = "obrien-fleming") -> float:
    """Cumulative alpha spent by information fraction ``fraction`` (0..1); equals ``alpha`` at 1."""
    if fraction <= 0:
        return 0.0
    fraction = min(fraction, 1.0)
    if spending == "obrien-fleming":
        return float(2 * stats.norm.sf(stats.norm.isf(alpha / 2) / math.sqrt(fraction)))
    if spending == "pocock":
        return alpha * math.log1p((math.e - 1) * fraction)
    raise ValueError(f"unknown alpha spending {spending!r} (known: {', '.join(SPENDING)})")


@dataclass(frozen=True)
class SequentialPlan:
    """How many looks at most, from which look on a verdict counts, and the alpha of each look."""

    alpha: float
    max_looks: int
    min_looks: int = 2
    spending: str = "obrien-fleming"

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"sequential alpha must be in (0, 0.5), got {self.alpha!r}")
        if not 1 <= self.min_looks <= self.max_looks:
            raise ValueError(f"need 1 <= min looks ({self.min_looks}) <= max looks ({self.max_looks})")
        if self.spending not in SPENDING:
            raise ValueError(f"unknown alpha spending {self.spending!r} (known: {', '.join(SPENDING)})")

    def alpha_at(self, look: int) -> float:
        """The alpha to judge look ``look`` (1-based) at. Looks before ``min_looks`` carry no verdict of
        their own; they get ``min_looks``' alpha, which holds everything spent up to it."""
        if look < 1 or look > self.max_looks:
            raise ValueError(f"look {look} outside 1..{self.max_looks}")
        look = max(look, self.min_looks)
        before = 0.0 if look == self.min_looks else spent(self.alpha, (look - 1) / self.max_looks, self.spending)
        return spent(self.alpha, look / self.max_looks, self.spending) - before

    def adjust_p(self, look: int, p: float) -> float:
        """A look's p-value on the plan's scale: ``p · alpha / alpha_k`` (≤ alpha exactly when p ≤ alpha_k)."""
        return min(1.0, p * self.alpha / self.alpha_at(look))

    def stop(self, look: int, comparisons: Sequence[Comparison]) -> bool:
        """Stop at ``max_looks``, or from ``min_looks`` on once every comparison is decided."""
        if look >= self.max_looks:
            return True
        return look >= self.min_looks and all(c.decided for c in comparisons)

    def describe(self) -> str:
        name = "O'Brien-Fleming" if self.spending == "obrien-fleming" else "Pocock"
        return (f"sequential: alpha {self.alpha:g} per comparison over at most {self.max_looks} looks "
                f"({name}-type spending, Bonferroni over looks, verdicts from look {self.min_looks})")


class Tracker:
    """The standing verdict of each metric over the looks: the first decided verdict is kept, and the
    p-value is the smallest look-adjusted p seen so far."""

    def __init__(self, plan: SequentialPlan) -> None:
        self.plan = plan
        self.standing: dict[str, Comparison] = {}
        self.look = 0

    def update(self, look: int, comparisons: Iterable[Comparison]) -> list[Comparison]:
        """Take look ``look``'s comparisons (judged at ``plan.alpha_at(look)``); return the standing ones."""
        if look <= self.look:
            raise ValueError(f"looks must increase: got {look} after {self.look}")
        self.look = look
        counts = look >= self.plan.min_looks
        for c in comparisons:
            prev = self.standing.get(c.metric)
            p = self.plan.adjust_p(look, c.p_value) if counts else 1.0
            if prev is not None and not prev.decided:
                p = min(p, prev.p_value)
            if prev is not None and prev.decided:
                continue  # kept as decided, p-value included, so verdict and suite p never disagree
            else:
                self.standing[c.metric] = replace(c, p_value=p, verdict=c.verdict if counts else "inconclusive")
        return list(self.standing.values())

    def done(self) -> bool:
        return self.plan.stop(self.look, list(self.standing.values()))
