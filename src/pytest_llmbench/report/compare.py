"""Two results folders side by side: the same scenarios and evals, B / A ratios, and intervals.

Scenarios match on (config, scenario), evals on (config, kind, set). Where both runs kept per-request or
per-case records for the same items (same prompts at the same indices; same BFCL case ids; same
accept-length prompts), the 95% interval of the ratio comes from a *paired* bootstrap over those items
(``scipy.stats.bootstrap(paired=True)``): the prompt-to-prompt spread cancels, so a small real change
is visible. Otherwise the bootstrap resamples each run on its own (``paired: no``). A metric that is one
number per run (throughput) gets its ratio only.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from pytest_llmbench.gate.verdict import fmt
from pytest_llmbench.report.folder import ResultsFolder

CONFIDENCE = 0.95
RESAMPLES = 4000
MIN_ITEMS = 3  # fewer items than this give no interval
SEED = 0

#: scenario metric → (per-request field, scale to the metric's unit, statistic over requests)
SCENARIO_METRICS: dict[str, tuple[str | None, float, str]] = {
    "output_throughput": (None, 1.0, ""),
    "request_throughput": (None, 1.0, ""),
    "median_ttft_ms": ("ttft_s", 1000.0, "median"),
    "median_tpot_ms": ("tpot_s", 1000.0, "median"),
    "median_e2e_latency_ms": ("e2e_s", 1000.0, "median"),
    "accept_length": ("accept_length", 1.0, "mean"),
}
STATISTICS: dict[str, Callable[..., Any]] = {"median": np.median, "mean": np.mean}


@dataclass(frozen=True)
class Row:
    config: str
    item: str  # scenario name or eval/set
    metric: str
    a: float | None
    b: float | None
    ratio: float | None
    low: float | None = None
    high: float | None = None
    paired: bool | None = None  # None: no interval
    n: int | None = None


@dataclass(frozen=True)
class Comparison:
    a: ResultsFolder
    b: ResultsFolder
    rows: list[Row]
    only_a: list[str]
    only_b: list[str]


def ratio_interval(a: Sequence[float], b: Sequence[float], statistic: str, paired: bool) -> tuple[float, float] | None:
    """95% bootstrap interval of statistic(b) / statistic(a); None when too few items or degenerate."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if min(xa.size, xb.size) < MIN_ITEMS or (paired and xa.size != xb.size):
        return None
    f = STATISTICS[statistic]

    def ratio(x, y, axis=-1):
        den = f(x, axis=axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            return f(y, axis=axis) / den

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate samples warn; a NaN bound is handled below
        res = stats.bootstrap((xa, xb), ratio, paired=paired, vectorized=True, n_resamples=RESAMPLES,
                              confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(SEED))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else None


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or a == 0:
        return None
    return float(b) / float(a)


def _per_request(scenario: dict[str, Any], field: str, scale: float) -> dict[int, tuple[Any, float]]:
    """index → (prompt_tokens, value) of the successful requests that have the field."""
    out = {}
    for r in scenario.get("requests") or []:
        if r.get("ok") and isinstance(r.get(field), (int, float)) and r.get("index") is not None:
            out[int(r["index"])] = (r.get("prompt_tokens"), float(r[field]) * scale)
    return out


def _items(a: dict[Any, tuple[Any, float]], b: dict[Any, tuple[Any, float]]):
    """Paired values when both runs measured the same items (same keys, same prompt), else each run alone."""
    common = sorted(set(a) & set(b), key=str)
    same = common and all(a[k][0] == b[k][0] for k in common)
    if same and len(common) >= MIN_ITEMS:
        return [a[k][1] for k in common], [b[k][1] for k in common], True
    return [v for _, v in a.values()], [v for _, v in b.values()], False


def _row(config: str, item: str, metric: str, a_value: Any, b_value: Any,
         per_a: dict | None = None, per_b: dict | None = None, statistic: str = "mean") -> Row:
    row = Row(config, item, metric, a_value, b_value, _ratio(a_value, b_value))
    if per_a and per_b:
        xa, xb, paired = _items(per_a, per_b)
        got = ratio_interval(xa, xb, statistic, paired)
        if got:
            return Row(config, item, metric, a_value, b_value, row.ratio, got[0], got[1], paired,
                       len(xa) if paired else len(xa) + len(xb))
    return row


def _scenarios(folder: ResultsFolder) -> dict[tuple[str, str], dict[str, Any]]:
    return {(str(s.get("config")), str(s.get("scenario"))): s for s in folder.kind("scenario")}


def _evals(folder: ResultsFolder) -> dict[tuple[str, str, str], dict[str, Any]]:
    out = {}
    for r in folder.kind("accept_length"):
        out[(str(r.get("config")), "accept_length", str(r.get("set")))] = r
    for r in folder.kind("bfcl"):
        out[(str(r.get("config")), "bfcl", str(r.get("mode")))] = r
    return out


def compare(a: ResultsFolder, b: ResultsFolder) -> Comparison:
    rows: list[Row] = []
    sa, sb = _scenarios(a), _scenarios(b)
    for key in [k for k in sa if k in sb]:
        ra, rb = sa[key], sb[key]
        ma, mb = ra.get("metrics") or {}, rb.get("metrics") or {}
        for metric, (field, scale, statistic) in SCENARIO_METRICS.items():
            if ma.get(metric) is None and mb.get(metric) is None:
                continue
            per = (_per_request(ra, field, scale), _per_request(rb, field, scale)) if field else (None, None)
            rows.append(_row(key[0], key[1], metric, ma.get(metric), mb.get(metric), *per, statistic=statistic or "mean"))
    ea, eb = _evals(a), _evals(b)
    for key in [k for k in ea if k in eb]:
        config, kind, name = key
        ra, rb = ea[key], eb[key]
        if kind == "accept_length":
            per = [{(p.get("id"), p.get("turn")): (None, p["accept_length"]) for p in r.get("per_request") or []
                    if isinstance(p.get("accept_length"), (int, float))} for r in (ra, rb)]
            rows.append(_row(config, f"accept length · {name}", "accept_length", (ra.get("accept_length") or {}).get("mean"),
                             (rb.get("accept_length") or {}).get("mean"), *per))
        else:
            per = [{c.get("id"): (None, float(bool(c.get("passed")))) for c in r.get("cases") or []} for r in (ra, rb)]
            rows.append(_row(config, f"BFCL · {name}", "passed", ra.get("passed"), rb.get("passed"), *per))
    ka = set(sa) | {(k[0], f"{k[1]} {k[2]}") for k in ea}
    kb = set(sb) | {(k[0], f"{k[1]} {k[2]}") for k in eb}
    return Comparison(a, b, rows, sorted(" · ".join(k) for k in ka - kb), sorted(" · ".join(k) for k in kb - ka))


HEADER = ["config", "scenario / eval", "metric", "A", "B", "B / A", "95% interval", "paired", "n"]


def table_rows(c: Comparison) -> list[list[str]]:
    out = []
    for r in c.rows:
        interval = f"[{r.low:.3f}, {r.high:.3f}]" if r.low is not None and r.high is not None else "-"
        paired = "-" if r.paired is None else ("yes" if r.paired else "no")
        out.append([r.config, r.item, r.metric, fmt(r.a), fmt(r.b), "-" if r.ratio is None else f"{r.ratio:.3f}",
                    interval, paired, "-" if r.n is None else str(r.n)])
    return out


def markdown(c: Comparison) -> str:
    lines = ["## llmbench compare", "", f"A: `{c.a.path}`  ", f"B: `{c.b.path}`", "",
             f"{len(c.rows)} metrics on the scenarios and evals both runs have; ratio B / A with a "
             f"{CONFIDENCE:.0%} bootstrap interval (paired over the same requests/cases where both kept them).", "",
             "| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table_rows(c)]
    for label, names in (("only in A", c.only_a), ("only in B", c.only_b)):
        if names:
            lines += ["", f"{label}: " + ", ".join(names)]
    return "\n".join(lines) + "\n"


def html_page(c: Comparison) -> str:
    from pytest_llmbench.report import html, plots
    from pytest_llmbench.report.rows import Table

    kinds = ["differs" if r.low is not None and (r.low > 1 or r.high < 1) else "" for r in c.rows]
    table = Table("Comparison", HEADER, table_rows(c), kinds,
                  note=f"A: {c.a.path} · B: {c.b.path} · ratio B / A, {CONFIDENCE:.0%} bootstrap interval")
    sections = [html.Section("comparison", "B / A", table, plots.ratio_forest(c.rows))]
    extra = [f"only in A: {', '.join(c.only_a)}" if c.only_a else "", f"only in B: {', '.join(c.only_b)}" if c.only_b else ""]
    return html.render_page(f"{c.a.path.name} vs {c.b.path.name}", f"{c.a.path} vs {c.b.path}", sections,
                            banner=f"{sum(k == 'differs' for k in kinds)} of {len(c.rows)} ratios have an interval "
                                   f"that excludes 1. " + ("; ".join(e for e in extra if e) or "Every scenario is in both."),
                            bad=False,
                            configs=sorted({r.config for r in c.rows}), n_records=len(c.a.records) + len(c.b.records))
