"""One verdict vocabulary, and the two ways a verdict is read off an estimate.

Every judge here answers the same question — is the candidate worse? — from the same kind of estimate:
a point with one-sided bounds and one-sided p-values (:class:`Estimate`: stats/ttest.py's
``Intersection``, stats/clustered.py's ``ClusterMean``). So the answer has one vocabulary,
:data:`VERDICTS`, and each judge is an adapter that speaks its own dialect of it to its users:

=============  ==========================  ======================  ==========================
verdict        comparison (compare/)       stored gate (gate/)     decision gap (evals/)
=============  ==========================  ======================  ==========================
regressed      regressed                   REGRESSED               worse
improved       improved                    improved                better
equivalent     equivalent                  pass                    same
inconclusive   inconclusive                pass                    same
=============  ==========================  ======================  ==========================

A stored gate and a decision gap test no equivalence (they have no detect size), so both of their
"not decided" words cover two verdicts; :data:`GATE_STATUS` and :data:`DECISION_STATUS` are the tables.

The rules: :func:`from_bounds` reads one-sided bounds (each at the decision's level) against a band
(the ignore size: regressed only when the interval lies wholly on its worse side) and, where there is
one, an equivalence range (the detect size); :func:`from_p` reads the same rule with a band of one point
(no change) off the two one-sided p-values, which is how a gate with a rejection level states it.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol, runtime_checkable

Verdict = Literal["regressed", "improved", "equivalent", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("regressed", "equivalent", "inconclusive", "improved")

#: The stored gate's words for each verdict (gate/types.py ``Status``; it tests no equivalence).
GATE_STATUS: dict[Verdict, Literal["REGRESSED", "improved", "pass"]] = {
    "regressed": "REGRESSED",
    "improved": "improved",
    "equivalent": "pass",
    "inconclusive": "pass",
}
#: A decision eval's gap (evals/decisions/paired.py ``PairedGap.status``).
DECISION_STATUS: dict[Verdict, Literal["worse", "better", "same"]] = {
    "regressed": "worse",
    "improved": "better",
    "equivalent": "same",
    "inconclusive": "same",
}


@runtime_checkable
class Estimate(Protocol):
    """What every test of a mean change gives: its point, one-sided bounds at a level, one-sided p-values."""

    @property
    def estimate(self) -> float: ...

    def bounds(self, level: float) -> tuple[float, float]:
        """The one-sided lower and upper bounds, each at ``level`` (0.025 each: the 95% interval)."""
        ...

    def p_below(self, value: float) -> float:
        """The one-sided p of "the true value is at or above ``value``" (small: the data say below)."""
        ...

    def p_above(self, value: float) -> float:
        """The one-sided p of "the true value is at or below ``value``"."""
        ...


def from_bounds(
    low: float,
    high: float,
    *,
    band: tuple[float, float],
    equivalent_within: tuple[float, float] | None = None,
    higher_is_better: bool = True,
) -> Verdict:
    """The verdict of one-sided bounds ``low``, ``high`` (each at the decision's level): wholly beyond the
    ``band`` (the ignore size around no change) on the worse side → regressed, on the better side →
    improved; wholly inside ``equivalent_within`` (the detect size) → equivalent; else inconclusive."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "inconclusive"
    below, above = high < band[0], low > band[1]
    if below or above:
        return "regressed" if below == higher_is_better else "improved"
    if equivalent_within is not None and equivalent_within[0] < low and high < equivalent_within[1]:
        return "equivalent"
    return "inconclusive"


def from_p(p_worse: float, p_better: float, level: float) -> Verdict:
    """The same rule with a band of one point (no change), read off the one-sided p-values: a side whose
    p is below ``level`` has its bound past the point (no equivalence range: never "equivalent")."""
    if p_worse < level:
        return "regressed"
    if p_better < level:
        return "improved"
    return "inconclusive"
