"""Two results folders side by side: the same scenarios and evals, B / A ratios and paired intervals.

Scenarios match on (config, scenario), evals on (config, kind, set). Where both runs kept per-request or
per-case records for the same items (same prompts at the same indices; same BFCL case ids; same
accept-length prompts), the row gets the paired estimate of the in-session comparison's functions
(``compare/stats.py`` with the sizes of ``compare/margins.py``) and its 95% interval.

Timing rows are **descriptive**: no regressed/equivalent verdict. Two sessions have no rounds, so the
prompt would be the unit, and every prompt of a session shares that session's host and server start: a
host 5% faster one night reads as a 5% "regression" over 4 prompts (issue 37). The in-session comparison,
with fresh server pairs as its unit, is what gates timing. Quality rows (pass/fail per case, accept
length per prompt) keep their verdict: a case's outcome does not depend on the host, so the case is a
fair unit across sessions. A metric that is one number per run (throughput) gets its ratio only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmbench.compare.judging import family_of
from pytest_llmbench.compare.margins import sizes_for
from pytest_llmbench.compare.stats import CONFIDENCE, compare_paired, compare_pass_fail
from pytest_llmbench.gate.types import fmt
from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.records.kinds import ScenarioRecord
from pytest_llmbench.records.read import of_kind

ALPHA = (1 - CONFIDENCE) / 2  # each side of the 95% interval: the verdict reads the interval shown
MIN_ITEMS = 3  # fewer paired items than this give no interval

#: scenario metric → (per-request field, scale to the metric's unit)
SCENARIO_METRICS: dict[str, tuple[str | None, float]] = {
    "output_throughput": (None, 1.0),
    "request_throughput": (None, 1.0),
    "median_ttft_ms": ("ttft_s", 1000.0),
    "median_tpot_ms": ("tpot_s", 1000.0),
    "median_e2e_latency_ms": ("e2e_s", 1000.0),
    "accept_length": ("accept_length", 1.0),
}


@dataclass(frozen=True)
class Row:
    config: str
    item: str  # scenario name or eval/set
    metric: str
    a: float | None
    b: float | None
    ratio: float | None
    low: float | None = None  # the 95% interval of the paired estimate (a ratio, or B − A for a difference)
    high: float | None = None
    paired: bool | None = None  # None: no interval
    n: int | None = None
    kind: str = "ratio"
    estimate: float | None = None
    verdict: str | None = None


@dataclass(frozen=True)
class Comparison:
    a: ResultsFolder
    b: ResultsFolder
    rows: list[Row]
    only_a: list[str]
    only_b: list[str]


def judge_items(
    metric: str, a: Sequence[float], b: Sequence[float], *, higher_is_better: bool, pass_fail: bool = False
) -> Any:
    """The in-session comparison's test on paired items of two runs (None with too few items)."""
    if len(a) < MIN_ITEMS or len(a) != len(b):
        return None
    sizes = sizes_for(metric)
    if pass_fail:
        return compare_pass_fail(metric, a, b, sizes=sizes, alpha=ALPHA)
    return compare_paired(metric, a, b, higher_is_better=higher_is_better, sizes=sizes, alpha=ALPHA)


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or a == 0:
        return None
    return float(b) / float(a)


def _per_request(scenario: Mapping[str, Any], field: str, scale: float) -> dict[int, tuple[Any, float]]:
    """index → (prompt_tokens, value) of the successful requests that have the field."""
    out = {}
    for r in scenario.get("requests") or []:
        if r.get("ok") and isinstance(r.get(field), (int, float)) and r.get("index") is not None:
            out[int(r["index"])] = (r.get("prompt_tokens"), float(r[field]) * scale)
    return out


def _items(a: dict[Any, tuple[Any, float]], b: dict[Any, tuple[Any, float]]) -> tuple[list[float], list[float]] | None:
    """Paired values when both runs measured the same items (same keys, same prompt), else None."""
    common = sorted(set(a) & set(b), key=str)
    if common and all(a[k][0] == b[k][0] for k in common):
        return [a[k][1] for k in common], [b[k][1] for k in common]
    return None


def _row(
    config: str,
    item: str,
    metric: str,
    a_value: Any,
    b_value: Any,
    per_a: dict | None = None,
    per_b: dict | None = None,
    pass_fail: bool = False,
) -> Row:
    row = Row(config, item, metric, a_value, b_value, _ratio(a_value, b_value))
    pairs = _items(per_a, per_b) if per_a and per_b else None
    higher = metric in ("accept_length", "passed")
    c = judge_items(metric, *pairs, higher_is_better=higher, pass_fail=pass_fail) if pairs else None
    if c is None:
        return row
    verdict = None if descriptive(metric) else c.verdict
    return Row(
        config, item, metric, a_value, b_value, row.ratio, c.ci_low, c.ci_high, True, c.n, c.kind, c.estimate, verdict
    )


def descriptive(metric: str) -> bool:
    """A timing metric: across two sessions its interval describes, it does not judge (module docstring)."""
    return metric not in ("accept_length", "passed") and family_of(metric) == "timing"


def _scenarios(folder: ResultsFolder) -> dict[tuple[str, str], ScenarioRecord]:
    return {(str(s.get("config")), str(s.get("scenario"))): s for s in of_kind(folder.records, "scenario")}


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
        for metric, (field, scale) in SCENARIO_METRICS.items():
            if ma.get(metric) is None and mb.get(metric) is None:
                continue
            per = (_per_request(ra, field, scale), _per_request(rb, field, scale)) if field else (None, None)
            rows.append(_row(key[0], key[1], metric, ma.get(metric), mb.get(metric), *per))
    ea, eb = _evals(a), _evals(b)
    for eval_key in [k for k in ea if k in eb]:
        config, kind, name = eval_key
        ea_rec, eb_rec = ea[eval_key], eb[eval_key]
        if kind == "accept_length":
            per_a, per_b = (
                {
                    (p.get("id"), p.get("turn")): (None, p["accept_length"])
                    for p in r.get("per_request") or []
                    if isinstance(p.get("accept_length"), (int, float))
                }
                for r in (ea_rec, eb_rec)
            )
            rows.append(
                _row(
                    config,
                    f"accept length · {name}",
                    "accept_length",
                    (ea_rec.get("accept_length") or {}).get("mean"),
                    (eb_rec.get("accept_length") or {}).get("mean"),
                    per_a,
                    per_b,
                )
            )
        else:
            per_a, per_b = (
                {c.get("id"): (None, float(bool(c.get("passed")))) for c in r.get("cases") or []}
                for r in (ea_rec, eb_rec)
            )
            rows.append(
                _row(
                    config,
                    f"BFCL · {name}",
                    "passed",
                    ea_rec.get("passed"),
                    eb_rec.get("passed"),
                    per_a,
                    per_b,
                    pass_fail=True,
                )
            )
    ka = set(sa) | {(k[0], f"{k[1]} {k[2]}") for k in ea}
    kb = set(sb) | {(k[0], f"{k[1]} {k[2]}") for k in eb}
    return Comparison(a, b, rows, sorted(" · ".join(k) for k in ka - kb), sorted(" · ".join(k) for k in kb - ka))


HEADER = ["config", "scenario / eval", "metric", "A", "B", "B / A", "paired estimate [95% CI]", "n", "verdict"]


def _estimate(r: Row) -> str:
    if r.low is None or r.high is None or r.estimate is None:
        return "-"
    if r.kind == "ratio":
        return f"×{r.estimate:.3f} [{r.low:.3f}, {r.high:.3f}]"
    return f"B−A {r.estimate:+.3g} [{r.low:+.3g}, {r.high:+.3g}]"


def table_rows(c: Comparison) -> list[list[str]]:
    return [
        [
            r.config,
            r.item,
            r.metric,
            fmt(r.a),
            fmt(r.b),
            "-" if r.ratio is None else f"{r.ratio:.3f}",
            _estimate(r),
            "-" if r.n is None else str(r.n),
            r.verdict or ("descriptive" if r.paired and descriptive(r.metric) else "-"),
        ]
        for r in c.rows
    ]


def markdown(c: Comparison) -> str:
    lines = [
        "## llmbench compare",
        "",
        f"A: `{c.a.path}`  ",
        f"B: `{c.b.path}`",
        "",
        f"{len(c.rows)} metrics on the scenarios and evals both runs have; ratio B / A, and where both kept "
        f"the same requests/cases the paired estimate with its {CONFIDENCE:.0%} interval over them "
        f"(compare/stats.py). Timing rows are descriptive, with no verdict: two sessions have no rounds, and "
        f"a host shift between them is in these numbers (gate timing with the in-session comparison, "
        f"--llmbench-reference-*). Quality rows (per case, per prompt) keep the in-session test's verdict.",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---" for _ in HEADER) + "|",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table_rows(c)]
    for label, names in (("only in A", c.only_a), ("only in B", c.only_b)):
        if names:
            lines += ["", f"{label}: " + ", ".join(names)]
    return "\n".join(lines) + "\n"


def html_page(c: Comparison) -> str:
    from pytest_llmbench.report import forest_plot, html
    from pytest_llmbench.report.rows import Table

    kinds = [r.verdict if r.verdict in ("regressed", "improved") else "" for r in c.rows]
    table = Table(
        "Comparison",
        HEADER,
        table_rows(c),
        kinds,
        note=f"A: {c.a.path} · B: {c.b.path} · ratio B / A; paired estimate with its {CONFIDENCE:.0%} "
        f"interval (compare/stats.py); timing rows descriptive (two sessions: no verdict), quality rows judged",
    )
    sections = [html.Section("comparison", "B / A", table, forest_plot.ratio_forest(c.rows))]
    extra = [
        f"only in A: {', '.join(c.only_a)}" if c.only_a else "",
        f"only in B: {', '.join(c.only_b)}" if c.only_b else "",
    ]
    return html.render_page(
        f"{c.a.path.name} vs {c.b.path.name}",
        f"{c.a.path} vs {c.b.path}",
        sections,
        banner=f"{sum(bool(k) for k in kinds)} of {len(c.rows)} rows regressed or improved. "
        + ("; ".join(e for e in extra if e) or "Every scenario is in both."),
        tone="neutral",
        configs=sorted({r.config for r in c.rows}),
        n_records=len(c.a.records) + len(c.b.records),
    )
