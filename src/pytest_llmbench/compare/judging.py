"""Which data judges which metric: a serving metric name → per-round or per-prompt paired values.

Throughput is a property of a whole block (requests overlap), so it is compared per round (log-ratio
t over rounds). Latencies and accept length belong to one request, so they are compared per prompt,
paired by (round, prompt): the same prompt sent to both arms in the same round. A latency check named
by its summary (``median_ttft_ms``, ``p99_tpot_ms``) is judged on the per-prompt values it summarises.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_llmbench.workload.records import RequestRecord

if TYPE_CHECKING:
    from pytest_llmbench.compare.interleave import Rounds
    from pytest_llmbench.compare.stats import Comparison

#: The metrics whose decision ends the rounds, unless ini ``llmbench_compare_metrics`` names others.
DEFAULT_DECIDE = ("output_throughput", "median_ttft_ms", "median_tpot_ms", "accept_length")
ROUND_METRICS = ("output_throughput", "request_throughput", "input_throughput", "total_throughput")
_LATENCY = re.compile(r"(mean|median|p\d{1,2})_(ttft|tpot|itl|e2e_latency)_ms")


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def _mean_itl(rec: RequestRecord) -> float | None:
    itls = rec.itls_s()
    return _ms(sum(itls) / len(itls)) if itls else None


REQUEST_VALUES: dict[str, Callable[[RequestRecord], float | None]] = {
    "ttft": lambda r: _ms(r.ttft_s),
    "tpot": lambda r: _ms(r.tpot_s),
    "itl": _mean_itl,
    "e2e_latency": lambda r: _ms(r.e2e_s),
    "accept_length": lambda r: r.spec.accept_length if r.spec else None,
}


@dataclass(frozen=True)
class Source:
    """How one metric is compared: ``per`` is "round" or "prompt"."""

    metric: str
    per: str
    higher_is_better: bool
    value: Callable[[RequestRecord], float | None] | None = None


def source_of(metric: str) -> Source | None:
    """The data behind a serving metric; None for anything else (it keeps its stored baseline)."""
    if metric in ROUND_METRICS:
        return Source(metric, "round", True)
    if metric in ("accept_length", "spec_accept_length"):
        return Source(metric, "prompt", True, REQUEST_VALUES["accept_length"])
    m = _LATENCY.fullmatch(metric)
    if m:
        return Source(metric, "prompt", False, REQUEST_VALUES[m.group(2)])
    return None


def family_of(metric: str) -> str:
    """The error-budget family (gate/budget.py) a comparison counts in."""
    return "quality" if metric in ("accept_length", "spec_accept_length") else "timing"


def compare_metric(metric: str, rounds: "Rounds", *, alpha: float,
                   margins: Mapping[str, float] | None = None) -> "Comparison | None":
    """The comparison of one metric at one look; None when either arm has no value for it."""
    from pytest_llmbench.compare.margins import margin_for
    from pytest_llmbench.compare.stats import compare_paired, compare_rounds

    source = source_of(metric)
    if source is None:
        return None
    kind, margin = margin_for(metric, margins)
    if source.per == "round":
        ref, cand = rounds.round_values(metric)
        if len(ref) < 2:
            return None
        return compare_rounds(metric, ref, cand, higher_is_better=source.higher_is_better, margin=margin,
                              alpha=alpha)
    ref, cand, where = rounds.request_values(source.value)  # type: ignore[arg-type]
    # Timing shares each block's host state, so the round is its unit; accept length does not, and a prompt
    # sent again in the next round is the same observation, so the prompt is its unit.
    unit = "rounds" if family_of(metric) == "timing" else "prompts"
    groups = [r for r, _ in where] if unit == "rounds" else [i for _, i in where]
    if len(ref) < 2 or len(set(groups)) < 2:
        return None
    return compare_paired(metric, ref, cand, higher_is_better=source.higher_is_better, margin=margin,
                          alpha=alpha, relative=kind == "ratio", rounds=groups, unit=unit)


class FamilyPlans:
    """One sequential plan per error-budget family (their alphas differ); the rounds stop when every
    comparison is decided, or at the last look."""

    def __init__(self, alphas: Mapping[str, float], *, max_looks: int, min_looks: int = 2) -> None:
        from pytest_llmbench.compare.sequential import SequentialPlan

        self.max_looks, self.min_looks = max_looks, min_looks
        self.plans = {f: SequentialPlan(alpha=a, max_looks=max_looks, min_looks=min_looks) for f, a in alphas.items()}

    def alpha_at(self, family: str, look: int) -> float:
        return self.plans[family].alpha_at(look)

    def adjust_p(self, family: str, look: int, p: float) -> float:
        return self.plans[family].adjust_p(look, p)

    def stop(self, look: int, comparisons: "Sequence[Comparison]") -> bool:
        """Each family's plan decides for its own comparisons (decided, or futile: no verdict reachable)."""
        by_family: dict[str, list] = {f: [] for f in self.plans}
        for c in comparisons:
            by_family[family_of(c.metric)].append(c)
        return all(plan.stop(look, by_family[f]) for f, plan in self.plans.items())

    def describe(self) -> str:
        return "; ".join(f"{f}: {p.describe()}" for f, p in self.plans.items())


def judge_all(metrics: Iterable[str], plans: FamilyPlans, margins: Mapping[str, float] | None = None
              ) -> "Callable[[Rounds, int], list[Comparison]]":
    """The judge of one scenario's rounds: every named metric both arms have, at its family's alpha for
    the look; a verdict once decided is kept (compare.sequential.Tracker), its p-value look-adjusted."""
    from pytest_llmbench.compare.sequential import Tracker

    names = tuple(metrics)
    trackers = {f: Tracker(p) for f, p in plans.plans.items()}

    def judge(rounds: "Rounds", look: int) -> "list[Comparison]":
        by_family: dict[str, list] = {}
        for name in names:
            fam = family_of(name)
            c = compare_metric(name, rounds, alpha=plans.alpha_at(fam, look), margins=margins)
            if c is not None:
                by_family.setdefault(fam, []).append(c)
        out: list = []
        for fam, tracker in trackers.items():
            if by_family.get(fam) or tracker.standing:
                out.extend(tracker.update(look, by_family.get(fam, [])))
        return out

    return judge
