"""Which data judges which metric: a serving metric name → per-round or per-prompt paired values.

Throughput is a property of a whole block (requests overlap), so it is compared per unit (log-ratio
t over server pairs, or over rounds where the round is the unit: compare/power.py). Latencies belong to one
request but share their block's host state and their server's start, so the unit (server pair or round)
is their unit too, and each summary is judged as what it names (issue 37: a p99 judged as a mean read a
tail-only regression as "equivalent"):

- ``mean_*_ms``: per-prompt log ratios, paired by (round, prompt), averaged per unit, t over units (the
  geometric mean of per-request ratios);
- ``median_*_ms`` and ``pNN_*_ms``: each arm's quantile of its requests in each unit, their log ratio, t
  over units (the per-unit quantile ratio). A quantile needs enough requests per unit to be more than the
  unit's maximum (``1 / (1 - q)``: 2 for the median, 100 for p99); with fewer the check is refused with
  an error that says how to get them.

Accept length does not depend on the host: per prompt, averaged over rounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pytest_llmbench.compare.margins import LATENCY_NAME, LATENCY_WORDS, sizes_for
from pytest_llmbench.compare.power import MIN_ROUNDS, Design, Need, Plan, plan_rounds, units_for
from pytest_llmbench.compare.stats import Spread, compare_paired, compare_rounds, unit_quantiles
from pytest_llmbench.workload.records import RequestRecord

if TYPE_CHECKING:
    from pytest_llmbench.compare.rounds import Rounds
    from pytest_llmbench.compare.stats import Comparison

#: The metrics the pilot plans the rounds for, unless ini ``llmbench_compare_metrics`` names others.
DEFAULT_DECIDE = ("output_throughput", "median_tpot_ms", "accept_length")
ROUND_METRICS = ("output_throughput", "request_throughput", "input_throughput", "total_throughput")
_LATENCY = LATENCY_NAME


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
    """How one metric is compared: ``per`` is "round" or "prompt"; ``quantile`` (0.5 for a median, 0.99
    for p99) when the metric is a percentile of per-request values."""

    metric: str
    per: str
    higher_is_better: bool
    value: Callable[[RequestRecord], float | None] | None = None
    quantile: float | None = None


def quantile_of(summary: str) -> float | None:
    """``median`` → 0.5, ``p99`` → 0.99, ``mean`` → None."""
    if summary == "median":
        return 0.5
    return int(summary[1:]) / 100 if summary.startswith("p") else None


def source_of(metric: str) -> Source | None:
    """The data behind a serving metric; None for anything else (it keeps its stored baseline)."""
    if metric in ROUND_METRICS:
        return Source(metric, "round", True)
    if metric in ("accept_length", "spec_accept_length"):
        return Source(metric, "prompt", True, REQUEST_VALUES["accept_length"])
    m = _LATENCY.fullmatch(metric)
    if m:
        return Source(metric, "prompt", False, REQUEST_VALUES[m.group(2)], quantile_of(m.group(1)))
    return None


#: The comparison families whose names the user sets sizes for by serving metric (checked when read).
_SERVING_SIZES = {"ttft", "tpot", "itl", "e2e", "latency", "throughput", "tps", "accept", "acceptance"}


def unknown_size_name(metric: str) -> str | None:
    """Why an ini size for ``metric`` would never apply, or None: a name with a serving word (``ttft_ms``,
    ``p99_ttft``) that is no serving metric a comparison judges and no latency word. Other names (a case
    metric: ``bfcl_passed``) are the user's own and cannot be known before the tests run."""
    if source_of(metric) is not None or metric in LATENCY_WORDS:
        return None
    if not set(re.split(r"[^a-z0-9]+", metric.lower())) & _SERVING_SIZES:
        return None
    return (
        f"{metric!r} is not a metric a comparison judges: use a serving metric (output_throughput, "
        f"median_tpot_ms, p99_ttft_ms, accept_length, ...) or a latency word for all its summaries "
        f"({', '.join(LATENCY_WORDS)})"
    )


def family_of(metric: str) -> str:
    """The error-budget family (gate/budget.py) a comparison counts in."""
    return "quality" if metric in ("accept_length", "spec_accept_length") else "timing"


def compare_metric(
    metric: str,
    rounds: Rounds,
    *,
    alpha: float,
    detect: Mapping[str, object] | None = None,
    ignore: Mapping[str, object] | None = None,
    spread: Spread | None = None,
) -> Comparison | None:
    """The comparison of one metric over ``rounds``; None when either arm has no value for it. ``spread``
    (a pilot's) makes a round-unit comparison Stein's two-stage t."""
    source = source_of(metric)
    if source is None:
        return None
    sizes = sizes_for(metric, detect, ignore)
    if source.per == "round":
        ref, cand = rounds.round_values(metric)
        if len(ref) < MIN_ROUNDS:
            return None
        return compare_rounds(
            metric,
            ref,
            cand,
            higher_is_better=source.higher_is_better,
            sizes=sizes,
            alpha=alpha,
            spread=spread,
            unit=rounds.unit_name,
        )
    assert source.value is not None  # source_of gives every per-prompt source its value function
    ref, cand, where = rounds.request_values(source.value)
    # Timing shares each block's host state and each server's start, so the unit (server pair or round) is
    # its unit; accept length does not, and a prompt sent again in the next round is the same observation,
    # so the prompt is its unit.
    timing = family_of(metric) == "timing"
    unit = rounds.unit_name if timing else "prompts"
    groups = [rounds.unit_of(r) for r, _ in where] if timing else [i for _, i in where]
    if len(ref) < 2 or len(set(groups)) < 2:
        return None
    hib = source.higher_is_better
    if source.quantile is not None:  # a percentile: each arm's quantile per unit, the ratio of the two
        ref_q, cand_q = unit_quantiles(metric, ref, cand, groups, source.quantile, unit=unit)
        what = f"per-{unit_singular(unit)} {metric.split('_', 1)[0]} ratio"
        c = compare_rounds(
            metric,
            ref_q,
            cand_q,
            higher_is_better=hib,
            sizes=sizes,
            alpha=alpha,
            spread=spread,
            unit=unit,
            statistic=what,
        )
        over = f"over {len(ref_q)} {unit}"
        return replace(c, method=c.method.replace(over, f"{over} ({len(ref)} requests)", 1))
    return compare_paired(
        metric,
        ref,
        cand,
        higher_is_better=hib,
        sizes=sizes,
        alpha=alpha,
        rounds=groups,
        unit=unit,
        spread=spread if timing else None,
    )


def unit_singular(unit: str) -> str:
    return {"server pairs": "server-pair", "rounds": "round", "prompts": "prompt"}.get(unit, unit)


def per_round(metric: str) -> bool:
    """Judged over rounds (so the pilot plans for it): throughput and latency, not accept length."""
    source = source_of(metric)
    return source is not None and family_of(metric) == "timing"


class Judge:
    """One scenario's comparisons: the pilot's plan (power.plan_rounds over the deciding metrics) and the
    final verdicts, each metric at its family's alpha."""

    def __init__(
        self,
        metrics: Iterable[str],
        alphas: Mapping[str, float],
        *,
        design: Design,
        detect: Mapping[str, object] | None = None,
        ignore: Mapping[str, object] | None = None,
    ) -> None:
        self.metrics = tuple(metrics)
        self.alphas = dict(alphas)
        self.design = design
        self.detect, self.ignore = detect, ignore

    def alpha(self, metric: str) -> float:
        return self.alphas[family_of(metric)]

    def plan(self, rounds: Rounds, *, seconds_per_round: float, elapsed_s: float) -> Plan:
        """After the pilot: each deciding round metric's spread and the rounds it needs."""
        pilot = len(rounds.complete)
        needs = []
        for metric in self.metrics:
            if not per_round(metric):
                continue
            c = compare_metric(metric, rounds, alpha=self.alpha(metric), detect=self.detect, ignore=self.ignore)
            if c is None or not math.isfinite(c.se):
                continue
            spread = Spread(c.se * math.sqrt(c.n), int(c.df))
            needs.append(
                Need(
                    metric,
                    spread,
                    c.sizes,
                    rounds.unit_rounds
                    * units_for(
                        spread,
                        sizes=c.sizes,
                        alpha=self.alpha(metric),
                        higher_is_better=c.higher_is_better,
                        power=self.design.power,
                    ),
                )
            )
        return plan_rounds(
            needs,
            design=self.design,
            pilot=pilot,
            seconds_per_round=seconds_per_round,
            elapsed_s=elapsed_s,
            unit_rounds=rounds.unit_rounds,
        )

    def spread_of(self, metric: str, rounds: Rounds, plan: Plan) -> Spread | None:
        """The pilot's spread of ``metric`` (computed on the pilot rounds if it did not plan)."""
        if not per_round(metric) or len(rounds.complete) <= plan.pilot:
            return None  # no rounds beyond the pilot: the plain t on them is the same test
        if metric in plan.spreads:
            return plan.spreads[metric]
        c = compare_metric(
            metric, rounds.upto(plan.pilot), alpha=self.alpha(metric), detect=self.detect, ignore=self.ignore
        )
        return Spread(c.se * math.sqrt(c.n), int(c.df)) if c is not None and math.isfinite(c.se) else None

    def compare(
        self,
        metric: str,
        rounds: Rounds,
        plan: Plan,
        *,
        detect: Mapping[str, object] | None = None,
        ignore: Mapping[str, object] | None = None,
    ) -> Comparison | None:
        """One metric's final comparison, at the judge's sizes or at ``detect``/``ignore`` (a check's own)."""
        return compare_metric(
            metric,
            rounds,
            alpha=self.alpha(metric),
            detect=self.detect if detect is None else detect,
            ignore=self.ignore if ignore is None else ignore,
            spread=self.spread_of(metric, rounds, plan),
        )

    def judge(self, rounds: Rounds, plan: Plan) -> list[Comparison]:
        out = []
        for metric in self.metrics:
            c = self.compare(metric, rounds, plan)
            if c is not None:
                out.append(c)
        return out
