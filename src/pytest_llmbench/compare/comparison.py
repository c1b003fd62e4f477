"""What every comparison gives: an estimate, its 95% interval, a p-value and a verdict, read off one-sided
bounds against the metric's two sizes (compare/margins.py) at the comparison's ``alpha``:

- ``regressed``: the one-sided test of "not worse by more than ``ignore``" rejects at ``alpha``
  (``p_value`` is that test's p). A change no bigger than ``ignore`` is called regressed with
  probability ≤ alpha;
- ``improved``: the mirror test;
- ``equivalent``: TOST within ± ``detect`` rejects at ``alpha``: every change the gate must catch is
  ruled out (``p_equivalent``);
- ``inconclusive``: anything else.

The interval a user reads is always the nominal 95% one (``ci_low``, ``ci_high``), whatever ``alpha`` the
decision used, and every comparison says what it could have caught (``detectable``: the smallest worsening
called regressed with 95% power at its n and spread) and what its interval rules out (``rules_out``). The
tests that give the bounds are compare/stats.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy import stats

from pytest_llmbench.compare.margins import RATIO, Sizes
from pytest_llmbench.stats.verdicts import Verdict, from_bounds

CONFIDENCE = 0.95  # every interval a user reads
POWER = 0.95  # the power ``detectable`` and the round planner are stated at
#: The fewest degrees of freedom a t-based verdict stands on (docs/COMPARE_STATS.md, "The floor").
MIN_DF = 3
TOO_FEW = "budget too small to judge"  # what a comparison below the floor says (tables look for it)


@dataclass(frozen=True)
class Spread:
    """A standard deviation per unit (on the tested scale) and its degrees of freedom: a pilot's."""

    sd: float
    df: int


@dataclass(frozen=True)
class Comparison:
    """One metric's reference-vs-candidate result."""

    metric: str
    kind: str  # "ratio" (candidate / reference) or "difference" (candidate - reference)
    reference: float
    candidate: float
    estimate: float
    ci_low: float  # the 95% interval
    ci_high: float
    ignore: float
    detect: float
    higher_is_better: bool
    p_value: float  # one-sided p of "candidate not worse than reference by more than ``ignore``"
    verdict: Verdict  # stats/verdicts.py: the one vocabulary
    n: int
    method: str
    alpha: float = float("nan")  # the decision's level (one-sided)
    p_equivalent: float = float("nan")  # TOST p within ± detect
    detectable: float = float("nan")  # the smallest worsening caught with 95% power (the sizes' unit)
    se: float = float("nan")  # standard error on the tested scale (log ratio or difference)
    df: float = float("nan")  # degrees of freedom of a t-based comparison
    statistic: str = ""  # what ``estimate``, ``reference`` and ``candidate`` are (every table says it)
    unit_sd: float = float("nan")  # a t-based comparison's SD per unit on the tested scale (n − 1 df)

    @property
    def spread(self) -> Spread | None:
        """The units' own SD and n − 1 df, which a pilot hands to Stein's test (not ``se``/``df``: those are
        the binding test's, a dependence guard's where it binds); None where there is none."""
        if not (math.isfinite(self.unit_sd) and self.n >= 2):
            return None
        return Spread(self.unit_sd, self.n - 1)

    @property
    def decided(self) -> bool:
        return self.verdict != "inconclusive"

    @property
    def sizes(self) -> Sizes:
        return Sizes(self.kind, self.ignore, self.detect)

    @property
    def rules_out(self) -> float:
        """The worsening beyond which the 95% interval excludes the truth (0: it excludes any)."""
        return rules_out(self.ci_low, self.ci_high, kind=self.kind, higher_is_better=self.higher_is_better)

    def as_record(self) -> dict[str, Any]:
        """The results.jsonl fields of a comparison (the caller adds config, rounds, stop, ...)."""
        return {
            "metric": self.metric,
            "reference": self.reference,
            "candidate": self.candidate,
            self.kind: self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": CONFIDENCE,
            "verdict": self.verdict,
            "p_value": self.p_value,
            "p_equivalent": self.p_equivalent,
            "alpha": self.alpha,
            "n": self.n,
            "method": self.method,
            "ignore": self.ignore,
            "detect": self.detect,
            "kind": self.kind,
            "higher_is_better": self.higher_is_better,
            "rules_out": self.rules_out,
            "detectable": self.detectable,
            "se": self.se,
            "df": self.df,
            "statistic": self.statistic,
        }


def _bounds(kind: str, size: float) -> tuple[float, float]:
    return (1.0 - size, 1.0 + size) if kind == RATIO else (-size, size)


def not_judged(metric: str, sizes: Sizes, *, higher_is_better: bool, why: str, alpha: float = math.nan) -> Comparison:
    """An inconclusive comparison with no estimate: what was to be judged, and why nothing could be
    (no case on either arm, a budget below the floor); it is recorded like any other so nothing is silent."""
    nan = math.nan
    return Comparison(
        metric, sizes.kind, nan, nan, nan, nan, nan, sizes.ignore, sizes.detect, higher_is_better,
        1.0, "inconclusive", 0, why, alpha=alpha,
    )  # fmt: skip


def verdict_of(low: float, high: float, *, sizes: Sizes, higher_is_better: bool) -> Verdict:
    """The verdict of one-sided bounds at the decision's alpha (``low``, ``high``, on the estimate's own
    scale): beyond ± ignore as a whole → regressed/improved; inside ± detect → equivalent (stats/verdicts.py)."""
    return from_bounds(
        low,
        high,
        band=_bounds(sizes.kind, sizes.ignore),
        equivalent_within=_bounds(sizes.kind, sizes.detect),
        higher_is_better=higher_is_better,
    )


def rules_out(low: float, high: float, *, kind: str, higher_is_better: bool) -> float:
    """The worsening an interval excludes, in the sizes' unit (0.024: a slowdown beyond 2.4%)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.inf
    if kind == RATIO:
        return max(0.0, 1.0 - low) if higher_is_better else max(0.0, high - 1.0)
    return max(0.0, -low) if higher_is_better else max(0.0, high)


def scale(kind: str, size: float, worse: bool, higher_is_better: bool) -> float:
    """A size on the tested scale (log ratio or difference), signed: ``worse`` by it, or better."""
    sign = -1.0 if worse == higher_is_better else 1.0
    return math.log1p(sign * size) if kind == RATIO else sign * size


def unscale(kind: str, x: float) -> float:
    """A point on the tested scale back on the estimate's (a log ratio → a ratio)."""
    return math.exp(x) if kind == RATIO else x


def worsening(kind: str, x: float, higher_is_better: bool) -> float:
    """A point on the tested scale as a worsening in the sizes' unit (log(0.976) → 0.024)."""
    if kind == RATIO:
        return 1.0 - math.exp(x) if higher_is_better else math.exp(x) - 1.0
    return -x if higher_is_better else x


def detectable_change(
    se: float, df: float, *, sizes: Sizes, alpha: float, higher_is_better: bool, power: float = POWER
) -> float:
    """The smallest worsening a t-based test at ``alpha`` calls regressed with ``power``, given its
    standard error: ignore + (t_alpha + t_beta)·se on the tested scale."""
    if not math.isfinite(se) or not df >= 1:  # df may be inf: a normal-theory interval (bootstrap, McNemar)
        return math.inf
    reach = float(stats.t.isf(alpha, df) + stats.t.isf(1 - power, df)) * se
    start = scale(sizes.kind, sizes.ignore, True, higher_is_better)
    return worsening(sizes.kind, start - reach if higher_is_better else start + reach, higher_is_better)


def judged(
    metric: str,
    sizes: Sizes,
    higher_is_better: bool,
    alpha: float,
    values: tuple[float, float, float],
    ci: tuple[float, float],
    at_alpha: tuple[float, float],
    p: tuple[float, float],
    n: int,
    method: str,
    *,
    se: float,
    df: float,
    statistic: str,
) -> Comparison:
    """A comparison from what its test found on the estimate's own scale: ``values`` (reference, candidate,
    estimate), the 95% interval, the one-sided bounds at ``alpha`` that decide, and (p, p_equivalent)."""
    return Comparison(
        metric, sizes.kind, *values, *ci, sizes.ignore, sizes.detect, higher_is_better, p[0],
        verdict_of(*at_alpha, sizes=sizes, higher_is_better=higher_is_better), n, method,
        alpha=alpha, p_equivalent=p[1], se=se, df=df, statistic=statistic,
        detectable=detectable_change(se, df, sizes=sizes, alpha=alpha, higher_is_better=higher_is_better),
    )  # fmt: skip
