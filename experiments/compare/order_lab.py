"""How much going first is worth, measured from a session's ``comparison_block`` records (issue 37).

Every unit's pair of servers starts one arm first (``started_first``, alternating unit by unit) and every
round plays one arm first (``first_in_round``: ABBA then BAAB). Both orders are balanced, so an effect of
either cancels in the verdicts; these functions measure it, so that the balance is a measured choice and
not a hope. On an A/A both arms are one build, and any difference between the units (or rounds) where the
candidate went first and those where the reference did is the order's effect, twice over: starting first
worth ``+e`` to an arm gives ``+e`` to the candidate-first units and ``-e`` to the others.

Lab-only (used by experiments/compare/compare_pytest_sessions.py and its test): moved out of the package
from src/pytest_llmbench/compare/order.py (issue 54 §3).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from pytest_llmbench.compare.stats import CONFIDENCE

ORDERS = {"started_first": "whose server started first (per unit)", "first_in_round": "who played first (per round)"}


@dataclass(frozen=True)
class OrderEffect:
    """Candidate/reference ratio where the candidate went first, over the one where the reference did."""

    metric: str
    order: str  # a key of ORDERS
    candidate_first: int  # groups (units or rounds) in each arm of the split
    reference_first: int
    ratio: float  # exp(mean log ratio | candidate first - mean log ratio | reference first): 2e
    ci_low: float
    ci_high: float
    p_value: float  # Welch's two-sided t

    @property
    def per_arm(self) -> float:
        """The advantage of going first to one arm, as a ratio (the square root of ``ratio``)."""
        return math.sqrt(self.ratio)

    def describe(self) -> str:
        return (
            f"{self.metric}, {ORDERS[self.order]}: candidate-first / reference-first ×{self.ratio:.4f} "
            f"[{self.ci_low:.4f}, {self.ci_high:.4f}] (Welch p {self.p_value:.3g}; "
            f"{self.candidate_first} + {self.reference_first}); going first worth ×{self.per_arm:.4f} to an arm"
        )


def _log_ratios(blocks: Iterable[Mapping[str, Any]], metric: str, order: str) -> dict[str, list[float]]:
    """Per group (a unit for ``started_first``, a round for ``first_in_round``): the mean log ratio
    candidate/reference of ``metric``, split by which arm went first."""
    rounds: dict[tuple[Any, ...], dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for b in blocks:
        if b.get("record", "comparison_block") != "comparison_block" or b.get("warmup") or b.get(order) is None:
            continue
        key = (b.get("compare_session"), b.get("nodeid"), b.get("scenario"), b.get("round"))
        rounds[key][str(b.get("role"))] = b
    groups: dict[tuple[Any, ...], tuple[str, list[float]]] = {}
    for (session, nodeid, scenario, rnd), arms in rounds.items():
        ref, cand = arms.get("reference"), arms.get("candidate")
        if ref is None or cand is None:
            continue
        a, c = (ref.get("metrics") or {}).get(metric), (cand.get("metrics") or {}).get(metric)
        if not (isinstance(a, (int, float)) and isinstance(c, (int, float)) and a > 0 and c > 0):
            continue
        unit = ref.get("unit") if order == "started_first" else rnd
        gkey = (session, nodeid, scenario, unit)
        groups.setdefault(gkey, (str(ref.get(order)), []))[1].append(math.log(c / a))
    out: dict[str, list[float]] = {"candidate": [], "reference": []}
    for first, values in groups.values():
        if first in out:
            out[first].append(float(np.mean(values)))
    return out


def order_effect(blocks: Iterable[Mapping[str, Any]], metric: str, order: str) -> OrderEffect | None:
    """The order effect on ``metric`` from ``comparison_block`` records (None: fewer than 2 groups a side)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    split = _log_ratios(list(blocks), metric, order)
    cand, ref = np.asarray(split["candidate"]), np.asarray(split["reference"])
    if cand.size < 2 or ref.size < 2:
        return None
    diff = float(cand.mean() - ref.mean())
    va, vb = cand.var(ddof=1) / cand.size, ref.var(ddof=1) / ref.size
    se = math.sqrt(va + vb)
    if se == 0:
        return OrderEffect(metric, order, cand.size, ref.size, math.exp(diff), math.exp(diff), math.exp(diff), 0.0)
    df = (va + vb) ** 2 / (va**2 / (cand.size - 1) + vb**2 / (ref.size - 1))  # Welch–Satterthwaite
    half = float(stats.t.isf((1 - CONFIDENCE) / 2, df)) * se
    p = float(stats.ttest_ind(cand, ref, equal_var=False).pvalue)
    return OrderEffect(
        metric, order, cand.size, ref.size, math.exp(diff), math.exp(diff - half), math.exp(diff + half), p
    )
