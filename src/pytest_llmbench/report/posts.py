"""The seed posts' own tables, regenerated from a results folder.

Why: a rerun of ``pytest benches/ -m nvfp4`` should answer the posts' questions in the posts' shape —
the scenario × config table with the best value per row in bold, and the ratios their text quotes
("2.5x on chat, 1.16x at 120k", "NVFP4 32–37% faster than FP8") — with an interval beside each number
where the results allow one, instead of the posts' single numbers.

Intervals: where a cell has several runs (reruns merged into one folder) it shows their range; where it
has one run of a per-request metric (median TPOT/TTFT, mean accept length) a 95% bootstrap interval over
that run's requests (``scipy.stats.bootstrap``); a throughput from one run has none (comparing two
configs in one session is the comparison report's job).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from pytest_llmbench.records.read import of_kind
from pytest_llmbench.records.results import iter_records

SCENARIOS = ("chat-1u", "chat-4u", "prompt20k-1u", "prompt20k-4u", "prompt40k-1u", "prompt80k-1u", "prompt120k-1u")
ROW_LABELS = {
    "chat-1u": "chat, 1 user",
    "chat-4u": "chat, 4 users",
    "prompt20k-1u": "20k, 1 user",
    "prompt20k-4u": "20k, 4 users",
    "prompt40k-1u": "40k, 1 user",
    "prompt80k-1u": "80k, 1 user",
    "prompt120k-1u": "120k, 1 user",
}


@dataclass(frozen=True)
class Metric:
    """A scenario metric: its label, which way is better, and the per-request field behind it (if any)."""

    label: str
    better: str  # "higher" | "lower"
    fmt: str = "{:.1f}"
    per_request: str | None = None  # field of a scenario record's "requests" rows
    statistic: Callable[..., Any] = np.median
    scale: float = 1.0


METRICS: dict[str, Metric] = {
    "output_throughput": Metric("output tok/s", "higher"),
    "median_tpot_ms": Metric("median TPOT (ms)", "lower", "{:.2f}", "tpot_s", np.median, 1000.0),
    "median_ttft_ms": Metric("median TTFT (ms)", "lower", "{:.0f}", "ttft_s", np.median, 1000.0),
    "accept_length": Metric("mean accept length", "higher", "{:.2f}", "accept_length", np.mean, 1.0),
}


@dataclass(frozen=True)
class Ratio:
    """``candidate`` against ``reference`` per row: "x" (2.50x) or "%" (+32%); >1 / >0 means better."""

    candidate: str
    reference: str
    label: str
    style: str = "x"


@dataclass(frozen=True)
class PostTable:
    post: str
    title: str
    metric: str
    columns: tuple[tuple[str, str], ...]  # (config, column label)
    rows: tuple[str, ...] = SCENARIOS
    ratio: Ratio | None = None


_SPEC_COLS = (
    ("stock-nvfp4-nospec", "no drafter"),
    ("stock-nvfp4-mtp3", "MTP 3"),
    ("stock-nvfp4-mtp7", "MTP 7"),
    ("stock-nvfp4-dflash4", "DFlash2 4"),
    ("stock-nvfp4-dflash8", "DFlash2 8"),
    ("stock-nvfp4-dspark", "DSpark"),
)
_ONE_USER = ("chat-1u", "prompt20k-1u", "prompt40k-1u", "prompt80k-1u", "prompt120k-1u")
_FOUR = ("chat-1u", "chat-4u", "prompt20k-1u", "prompt20k-4u")
_FN_COLS = (
    ("stock-nvfp4-nospec", "27B, no drafter"),
    ("stock-nvfp4-dflash8", "27B, DFlash2 8"),
    ("flash-next-nvfp4-nospec", "Flash-Next"),
)

POST_TABLES: tuple[PostTable, ...] = (
    PostTable(
        "spec",
        "Output tok/s (one run per config)",
        "output_throughput",
        _SPEC_COLS,
        ratio=Ratio("stock-nvfp4-dflash8", "stock-nvfp4-nospec", "DFlash2 8 vs no drafter"),
    ),
    PostTable(
        "spec",
        "Median time per output token",
        "median_tpot_ms",
        _SPEC_COLS,
        ratio=Ratio("stock-nvfp4-dflash8", "stock-nvfp4-nospec", "DFlash2 8 decode vs no drafter"),
    ),
    PostTable(
        "spec", "Mean accept length (tokens per verify step, 1 user)", "accept_length", _SPEC_COLS[1:], rows=_ONE_USER
    ),
    PostTable(
        "fp8",
        "Output tok/s, DFlash2 8",
        "output_throughput",
        (("stock-fp8-dflash8", "FP8"), ("stock-nvfp4-dflash8", "NVFP4")),
        rows=_FOUR,
        ratio=Ratio("stock-nvfp4-dflash8", "stock-fp8-dflash8", "NVFP4 vs FP8", style="%"),
    ),
    PostTable(
        "swift",
        "Output tok/s, DFlash2 8",
        "output_throughput",
        (("stock-nvfp4-dflash8", "stock"), ("swift-nvfp4-dflash8", "Swift 1.5")),
        rows=_FOUR,
        ratio=Ratio("swift-nvfp4-dflash8", "stock-nvfp4-dflash8", "Swift vs stock", style="%"),
    ),
    PostTable(
        "flashnext",
        "Whole card, output tok/s",
        "output_throughput",
        _FN_COLS,
        ratio=Ratio("flash-next-nvfp4-nospec", "stock-nvfp4-dflash8", "Flash-Next vs 27B DFlash2 8"),
    ),
    PostTable(
        "flashnext",
        "Whole card, median TTFT",
        "median_ttft_ms",
        _FN_COLS,
        ratio=Ratio("flash-next-nvfp4-nospec", "stock-nvfp4-dflash8", "Flash-Next TTFT vs 27B DFlash2 8"),
    ),
    PostTable(
        "flashnext",
        "At 44 GB, output tok/s",
        "output_throughput",
        (("stock-nvfp4-dflash8", "27B, DFlash2 8"), ("flash-next-gguf-q4-44gb", "Flash-Next Q4, llama.cpp")),
        ratio=Ratio("flash-next-gguf-q4-44gb", "stock-nvfp4-dflash8", "llama.cpp 44 GB vs 27B", style="%"),
    ),
)


@dataclass(frozen=True)
class Cell:
    value: float
    low: float | None = None
    high: float | None = None
    runs: int = 1


def scenario_cells(records: Iterable[Mapping[str, Any]], metric: str) -> dict[tuple[str, str], Cell]:
    """(config, scenario) → the metric over every run of it in the folder, with its interval."""
    spec = METRICS[metric]
    runs: dict[tuple[Any, Any], list[Mapping[str, Any]]] = defaultdict(list)  # keys as the records have them
    for rec in records:
        value = (rec.get("metrics") or {}).get(metric)
        if isinstance(value, (int, float)):
            runs[(rec.get("config"), rec.get("scenario"))].append(rec)
    out = {}
    for key, recs in runs.items():
        values = np.array([r["metrics"][metric] for r in recs], dtype=float)
        if len(values) > 1:
            out[key] = Cell(float(values.mean()), float(values.min()), float(values.max()), len(values))
        else:
            out[key] = Cell(float(values[0]), *_bootstrap(recs[0], spec))
    return out


def _bootstrap(rec: Mapping[str, Any], spec: Metric) -> tuple[float | None, float | None]:
    if spec.per_request is None:
        return None, None
    xs = (
        np.array(
            [
                r[spec.per_request]
                for r in rec.get("requests") or []
                if r.get("ok", True) and isinstance(r.get(spec.per_request), (int, float))
            ],
            dtype=float,
        )
        * spec.scale
    )
    if len(xs) < 3 or np.ptp(xs) == 0:
        return None, None
    ci = stats.bootstrap(
        (xs,),
        spec.statistic,
        confidence_level=0.95,
        n_resamples=2000,
        method="percentile",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    return float(ci.low), float(ci.high)


def _fmt(cell: Cell | None, spec: Metric, best: bool) -> str:
    if cell is None:
        return "—"
    text = spec.fmt.format(cell.value)
    if best:
        text = f"**{text}**"
    if cell.low is not None and cell.high is not None:
        text += f" [{spec.fmt.format(cell.low)}–{spec.fmt.format(cell.high)}]"
    return text


def ratio_of(cand: Cell | None, ref: Cell | None, better: str) -> float | None:
    """How much better the candidate is: >1 means better, whichever way the metric points."""
    if cand is None or ref is None or not cand.value or not ref.value:
        return None
    return cand.value / ref.value if better == "higher" else ref.value / cand.value


def _ratio_text(r: float | None, style: str) -> str:
    if r is None:
        return "—"
    return f"{r:.2f}x" if style == "x" else f"{100 * (r - 1):+.0f}%"


def render_table(table: PostTable, cells: Mapping[tuple[str, str], Cell]) -> str:
    """One post table as Markdown: a row per scenario, a column per config, best per row in bold."""
    spec = METRICS[table.metric]
    rows = [r for r in table.rows if any((c, r) in cells for c, _ in table.columns)]
    header = ["", *[label for _, label in table.columns]] + ([table.ratio.label] if table.ratio else [])
    lines = [f"### {table.title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    ratios: list[tuple[str, float]] = []
    for row in rows:
        present = [cells[(c, row)].value for c, _ in table.columns if (c, row) in cells]
        best = (max if spec.better == "higher" else min)(present)
        out = [ROW_LABELS.get(row, row)]
        for config, _ in table.columns:
            cell = cells.get((config, row))
            out.append(_fmt(cell, spec, cell is not None and cell.value == best and len(present) > 1))
        if table.ratio:
            r = ratio_of(cells.get((table.ratio.candidate, row)), cells.get((table.ratio.reference, row)), spec.better)
            out.append(_ratio_text(r, table.ratio.style))
            if r is not None:
                ratios.append((row, r))
        lines.append("| " + " | ".join(out) + " |")
    if not rows:
        lines.append("| (no results for these configs) |")
    if table.ratio and ratios:
        lines += ["", ratio_summary(table.ratio, ratios)]
    return "\n".join(lines) + "\n"


def ratio_summary(ratio: Ratio, ratios: Sequence[tuple[str, float]]) -> str:
    """The sentence the posts write: first and last row ("2.50x on chat, 1.16x at 120k") and the range."""
    values = [r for _, r in ratios]
    lo, hi = min(values), max(values)
    if ratio.style == "%":
        if lo >= 1:
            span = f"{100 * (lo - 1):.0f}–{100 * (hi - 1):.0f}% faster"
        elif hi <= 1:
            span = f"{100 * (1 - hi):.0f}–{100 * (1 - lo):.0f}% slower"
        else:
            span = f"{100 * (lo - 1):+.0f}% to {100 * (hi - 1):+.0f}%"
        return f"{ratio.label}: {span} over {len(values)} rows."
    (first_row, first), (last_row, last) = ratios[0], ratios[-1]
    return (
        f"{ratio.label}: {first:.2f}x on {ROW_LABELS.get(first_row, first_row)}, {last:.2f}x at "
        f"{ROW_LABELS.get(last_row, last_row)} (range {lo:.2f}–{hi:.2f}x)."
    )


# The decisions post's Typed Decisions table: one row per config, the dataset scorer's columns.
DECISION_CONFIGS = (
    ("stock-bf16-nospec", "stock BF16"),
    ("stock-fp8-nospec", "stock FP8"),
    ("stock-nvfp4-nospec", "stock NVFP4"),
    ("swift-bf16-nospec", "Swift BF16"),
    ("swift-fp8-nospec", "Swift FP8"),
    ("swift-nvfp4-nospec", "Swift NVFP4"),
    ("stock-nvfp4-dflash8", "stock NVFP4 + DFlash2"),
)
DECISION_COLUMNS = (
    ("accuracy", "agreement", "higher"),
    ("kl", "KL", "lower"),
    ("brier", "Brier", "lower"),
    ("log_loss", "log loss", "lower"),
)


def render_decisions(records: Iterable[Mapping[str, Any]], dataset: str = "typed-decisions.pass1") -> str:
    """The decisions post's table for ``dataset``: agreement, KL, Brier and log loss per config, best in bold
    (the last record of a config wins when a folder holds several)."""
    latest: dict[str | None, dict[str, Any]] = {
        r.get("config"): (r.get("metrics") or {}).get("all") or {}
        for r in of_kind(records, "decisions")
        if r.get("dataset") == dataset
    }
    rows: list[tuple[str | None, str | None]] = [(c, label) for c, label in DECISION_CONFIGS if c in latest]
    rows += [(c, c) for c in latest if c not in dict(DECISION_CONFIGS)]
    header = ["", *[label for _, label, _ in DECISION_COLUMNS]]
    lines = [f"### {dataset}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    best = {}
    for key, _, better in DECISION_COLUMNS:
        values = [latest[c][key] for c, _ in rows if isinstance(latest[c].get(key), (int, float))]
        best[key] = (max if better == "higher" else min)(values) if len(values) > 1 else None
    for config, label in rows:
        cells = []
        for key, _, _ in DECISION_COLUMNS:
            v = latest[config].get(key)
            text = "—" if not isinstance(v, (int, float)) else f"{v:.3f}"
            cells.append(f"**{text}**" if v is not None and v == best[key] else text)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_post(results_dir: Path | str, post: str) -> str:
    """Every table of one post (``spec``, ``fp8``, ``swift``, ``flashnext``, ``decisions``) from a results folder."""
    if post == "decisions":
        return render_decisions(iter_records(results_dir, "decisions"))
    tables = [t for t in POST_TABLES if t.post == post]
    if not tables:
        known = sorted({t.post for t in POST_TABLES} | {"decisions"})
        raise ValueError(f"unknown post {post!r} (known: {', '.join(known)})")
    records = list(iter_records(results_dir, "scenario"))
    return "\n".join(render_table(t, scenario_cells(records, t.metric)) for t in tables)


def render_all(results_dir: Path | str) -> str:
    posts = [*dict.fromkeys(t.post for t in POST_TABLES), "decisions"]
    return "\n".join(f"## {post}\n\n{render_post(results_dir, post)}" for post in posts)


__all__ = [
    "METRICS",
    "POST_TABLES",
    "Cell",
    "Metric",
    "PostTable",
    "Ratio",
    "ratio_of",
    "ratio_summary",
    "render_all",
    "render_decisions",
    "render_post",
    "render_table",
    "scenario_cells",
]
