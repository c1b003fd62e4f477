"""Which data judges which metric: a serving metric name → per-round or per-prompt paired values.

Throughput is a property of a whole block (requests overlap), so it is compared per unit (log-ratio
t over server pairs, or over rounds where the round is the unit: compare/power.py). Latencies belong to one
request but share their block's host state and their server's start, so the unit (server pair or round)
is their unit too, and each summary is judged as what it names (issue 37: a p99 judged as a mean read a
tail-only regression as "equivalent"):

- ``mean_*_ms``: each arm's mean over its requests in each unit, their log ratio, t over units (the
  per-unit ratio of means). A geometric mean of per-request ratios, judged before issue 55, moved ×1.072
  where 10% of requests running 2× slower moved the mean ×1.10;
- ``median_*_ms`` and ``pNN_*_ms``: each arm's quantile of its requests in each unit, their log ratio, t
  over units (the per-unit quantile ratio). A quantile needs enough requests per unit to be more than the
  unit's maximum (``1 / (1 - q)``: 2 for the median, 100 for p99); with fewer the check is refused with
  an error that says how to get them.

ITL is what metrics.py's ``*_itl_ms`` are: every token gap, not one mean per request (issue 55), so
each arm's summary in a unit is over the token gaps of its requests. Only requests both arms completed
count, so the two arms' pools come from the same prompts.

Accept length does not depend on the host: per prompt, averaged over rounds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pytest_llmbench.compare.margins import LATENCY_NAME, LATENCY_WORDS, sizes_for
from pytest_llmbench.compare.power import MIN_ROUNDS, Design, Need, Plan, plan_rounds, units_for
from pytest_llmbench.compare.stats import Spread, compare_paired, compare_rounds, unit_summaries
from pytest_llmbench.workload.records import RequestRecord

if TYPE_CHECKING:
    from pytest_llmbench.compare.rounds import Rounds
    from pytest_llmbench.compare.stats import Comparison

#: The metrics the pilot plans the rounds for, unless ini ``llmbench_compare_metrics`` names others.
DEFAULT_DECIDE = ("output_throughput", "median_tpot_ms", "accept_length")
# capacity_rps: one capacity search per block (capacity/probe.py), judged over units like throughput
ROUND_METRICS = ("output_throughput", "request_throughput", "input_throughput", "total_throughput", "capacity_rps")
_LATENCY = LATENCY_NAME


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def _mean_itl(rec: RequestRecord) -> float | None:
    itls = rec.itls_s()
    return _ms(sum(itls) / len(itls)) if itls else None


REQUEST_VALUES: dict[str, Callable[[RequestRecord], float | None]] = {
    "ttft": lambda r: _ms(r.ttft_s),
    "tpot": lambda r: _ms(r.tpot_s),
    "itl": _mean_itl,  # one per request: pairs a request's arms; the comparison pools token gaps (TOKEN_VALUES)
    "e2e_latency": lambda r: _ms(r.e2e_s),
    "accept_length": lambda r: r.spec.accept_length if r.spec else None,
}

#: The values a latency summary is over when they are not one per request (metrics.py's definition).
TOKEN_VALUES: dict[str, Callable[[RequestRecord], list[float]]] = {
    "itl": lambda r: [1e3 * x for x in r.itls_s()],
}


def unit_pools(
    rounds: Rounds, word: str, value: Callable[[RequestRecord], float | None]
) -> list[tuple[list[float], list[float]]]:
    """Each unit's values of both arms (sorted unit order): one per request, or every token gap for
    ITL, from the requests both arms completed in the unit's rounds."""
    many = TOKEN_VALUES.get(word)
    blocks = {(b.round, b.role): b for b in rounds.blocks}
    pools: dict[int, tuple[list[float], list[float]]] = {}
    for r in rounds.complete:
        a = {rec.index: rec for rec in blocks[r, "reference"].result.records if rec.ok}
        b = {rec.index: rec for rec in blocks[r, "candidate"].result.records if rec.ok}
        pool = pools.setdefault(rounds.unit_of(r), ([], []))
        for i in sorted(set(a) & set(b)):
            if many is not None:
                va, vb = many(a[i]), many(b[i])
            else:
                x, y = value(a[i]), value(b[i])
                va, vb = ([] if x is None else [float(x)]), ([] if y is None else [float(y)])
            if va and vb:
                pool[0].extend(va)
                pool[1].extend(vb)
    return [pools[u] for u in sorted(pools) if pools[u][0]]


@dataclass(frozen=True)
class Source:
    """How one metric is compared: ``per`` is "round" or "prompt"; ``quantile`` (0.5 for a median, 0.99
    for p99) when the metric is a percentile of per-request values."""

    metric: str
    per: str
    higher_is_better: bool
    value: Callable[[RequestRecord], float | None] | None = None
    quantile: float | None = None
    word: str = ""  # the latency's name (ttft, tpot, itl, e2e_latency)


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
        return Source(metric, "prompt", False, REQUEST_VALUES[m.group(2)], quantile_of(m.group(1)), m.group(2))
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
        c = compare_rounds(
            metric,
            ref,
            cand,
            higher_is_better=source.higher_is_better,
            sizes=sizes,
            alpha=alpha,
            spread=spread,
            unit=rounds.unit_name,
        )
        censored = rounds.censored(metric)
        if censored:  # judged at their bound (compare/rounds.py CENSORED_AT): the table says how many
            c = replace(c, method=f"{c.method}; {censored} block(s) below the search's floor, judged at it")
        return c
    assert source.value is not None  # source_of gives every per-prompt source its value function
    hib = source.higher_is_better
    if family_of(metric) == "timing":
        # Latency shares each block's host state and each server's start, so the unit (server pair or
        # round) is its unit: each arm's summary per unit, named as metrics.py computes it.
        pools = unit_pools(rounds, source.word, source.value)
        if len(pools) < 2:
            return None
        unit = rounds.unit_name
        values = "token gaps" if source.word in TOKEN_VALUES else "requests"
        ref_s, cand_s = unit_summaries(metric, pools, source.quantile, unit=unit, values=values)
        per = f"per-{unit_singular(unit)}"
        name = "ratio of means" if source.quantile is None else f"{metric.split('_', 1)[0]} ratio"
        what = f"{per} {name}" + (" over token gaps" if values != "requests" else "")
        c = compare_rounds(
            metric,
            ref_s,
            cand_s,
            higher_is_better=hib,
            sizes=sizes,
            alpha=alpha,
            spread=spread,
            unit=unit,
            statistic=what,
        )
        over = f"over {len(ref_s)} {unit}"
        n = sum(len(r) for r, _ in pools)
        return replace(c, method=c.method.replace(over, f"{over} ({n} {values})", 1))
    # Accept length does not depend on the host, and a prompt sent again in the next round is the same
    # observation, so the prompt is its unit.
    ref, cand, where = rounds.request_values(source.value)
    groups = [i for _, i in where]
    if len(ref) < 2 or len(set(groups)) < 2:
        return None
    return compare_paired(
        metric, ref, cand, higher_is_better=hib, sizes=sizes, alpha=alpha, rounds=groups, unit="prompts"
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
            if c is None or c.spread is None:
                continue
            spread = c.spread  # the pilot's own SD, whatever test bound
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
        return c.spread if c is not None else None

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
