"""Adding rounds until every metric is decided, without spending more than the stated alpha.

Each look judges the comparisons at its own alpha; the per-look alphas are the increments of a Lan–DeMets
spending function of the information fraction ``look / max_looks`` and sum to the plan's alpha. Applied
as a Bonferroni split over looks (not the exact group-sequential boundaries), so the bound holds whatever
the test (t on few rounds, exact McNemar, bootstrap) and however the looks are correlated: a wrong
``regressed`` (or a wrong ``equivalent``) at any look has probability at most Σ alpha_k = alpha.

O'Brien–Fleming-type spending is the default: it spends almost nothing on the first looks, where a t on
two or three rounds cannot decide anything at a small alpha anyway, and keeps most of alpha for the late
looks (the last quarter of 20 looks gets 71% of it), so it keeps the most power at a given maximum.
``benches/perf/simulate_comparisons.out.md`` compares it with Pocock-type spending, an always-valid union
bound and fixed numbers of rounds.

A decided verdict is kept (:class:`Tracker`): a later look cannot turn it back into ``inconclusive``. The
p-value carried to the suite's Holm step is the look-adjusted ``min_k p_k · alpha / alpha_k``, which is a
valid p-value over all looks by the same Bonferroni argument.

Futility (non-binding): a metric that can no longer be decided by ``max_looks`` — even the most unfavourable
effect still plausible (a one-sided 10% bound) would leave the projected last-look interval across the margin —
does not hold the run open. It stays ``inconclusive`` and keeps being judged while other metrics need rounds.
Stopping without a verdict can only lower both error rates; what it costs in power is in the simulation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from scipy import stats

from pytest_llmbench.compare.stats import Comparison

SPENDING = ("obrien-fleming", "pocock")
FUTILITY_BOUND = 0.10  # one-sided: the effects still plausible when judging futility


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
    futility: bool = True

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
        """Stop at ``max_looks``, or from ``min_looks`` on once every comparison is decided (or, with
        ``futility``, cannot be decided any more)."""
        if look >= self.max_looks:
            return True
        return look >= self.min_looks and all(c.decided or self.futile(look, c) for c in comparisons)

    def futile(self, look: int, c: Comparison) -> bool:
        """Whether no verdict is reachable by ``max_looks`` for a t-based comparison judged at ``look``:
        project its standard error to the last look (sample size growing with the looks) and ask whether any
        effect in its plausible range (one-sided 10% bounds) would then give a decided interval."""
        if not self.futility or c.decided or look < self.min_looks or not math.isfinite(c.se) or c.n < 2:
            return False
        if c.se == 0:
            return True  # no spread and still undecided: more rounds of the same add nothing
        if c.kind == "ratio":
            if c.estimate <= 0:
                return False
            center, lo_b, hi_b = math.log(c.estimate), math.log1p(-c.margin), math.log1p(c.margin)
        else:
            center, lo_b, hi_b = c.estimate, -c.margin, c.margin
        n_last = max(c.n * self.max_looks / look, c.n + 1)
        half_last = float(stats.t.isf(self.alpha_at(self.max_looks), n_last - 1)) * c.se * math.sqrt(c.n / n_last)
        spread = float(stats.t.isf(FUTILITY_BOUND, c.n - 1)) * c.se
        low, high = center - spread, center + spread  # the plausible effects
        below = low + half_last < lo_b  # some plausible effect would end wholly below the margin
        above = high - half_last > hi_b
        inside = 2 * half_last < hi_b - lo_b and low < hi_b - half_last and high > lo_b + half_last
        return not (below or above or inside)

    def describe(self) -> str:
        name = "O'Brien-Fleming" if self.spending == "obrien-fleming" else "Pocock"
        return (f"sequential: alpha {self.alpha:g} per comparison over at most {self.max_looks} looks "
                f"({name}-type spending, Bonferroni over looks, verdicts from look {self.min_looks}"
                f"{', stops early when no verdict is reachable' if self.futility else ''})")


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

    def futile(self) -> list[str]:
        """The metrics that no longer hold the run open: undecided and not decidable by the last look."""
        return [m for m, c in self.standing.items() if self.plan.futile(self.look, c)]
