"""The report's figures, drawn with matplotlib and returned as SVG text to inline in report.html.

Each function takes a results folder and returns a list of :class:`Plot` (empty when the run has no
data for it), so a CPU run without BFCL or a GPU run without decisions simply has fewer figures.
Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state, no GUI backend) and text is
stored as paths, so the SVG looks the same on any machine, offline.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.report.rows import mean_prompt_tokens

STATUS_COLOR = {
    "REGRESSED": "#d62728",
    "improved": "#2ca02c",
    "new": "#7f7f7f",
    "pass": "#1f77b4",
    "learning": "#9467bd",
    "not comparable": "#8c564b",
}


@dataclass(frozen=True)
class Plot:
    id: str  # unique in the page (also the SVG's id prefix)
    title: str
    caption: str
    svg: str


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig, plot_id: str) -> str:
    """SVG text with ids unique to this figure (several figures share one HTML document)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": plot_id, "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: the SVG is inlined in HTML
    # matplotlib numbers its groups per figure (figure_1, axes_1 …): prefix every id and reference
    for old, new in (('id="', f'id="{plot_id}-'), ("url(#", f"url(#{plot_id}-"), ('href="#', f'href="#{plot_id}-')):
        text = text.replace(old, new)
    return text


def _colors(folder: ResultsFolder) -> dict[str, str]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {name: _hex(cmap(i % 10)) for i, name in enumerate(folder.configs)}


def _hex(rgba: tuple[float, ...]) -> str:
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgba[:3])


# --- serving -------------------------------------------------------------------------------------------


def throughput_vs_prompt(folder: ResultsFolder) -> list[Plot]:
    """Output tok/s and median TPOT against mean prompt length, one line per config and concurrency."""
    series: dict[tuple[Any, Any], list[tuple[float, float | None, float | None]]] = defaultdict(list)
    for s in of_kind(folder.records, "scenario"):
        m, x = s.get("metrics") or {}, mean_prompt_tokens(s)
        if x is None:
            continue
        series[(s.get("config"), s.get("max_concurrency"))].append(
            (x, m.get("output_throughput"), m.get("median_tpot_ms"))
        )
    if not series:
        return []
    colors = _colors(folder)
    fig = _figure(10, 3.6)
    ax_tput, ax_tpot = fig.subplots(1, 2)
    styles = ["-o", "--s", ":^", "-.D"]
    conc = sorted({c for _, c in series if c is not None}) or [None]
    for (config, c), pts in sorted(series.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or 0)):
        pts.sort()
        style = styles[conc.index(c) % len(styles)] if c in conc else styles[0]
        label = f"{config} · {c} user{'s' if c != 1 else ''}" if c is not None else str(config)
        for ax, idx in ((ax_tput, 1), (ax_tpot, 2)):
            xs = [p[0] for p in pts if p[idx] is not None]
            ys = [p[idx] for p in pts if p[idx] is not None]
            if xs:
                ax.plot(xs, ys, style, color=colors.get(config), label=label, markersize=5)
            if len(xs) == 1:  # a lone point has no line to read its value from: write it beside the marker
                ax.annotate(f"{ys[0]:,.1f}", (xs[0], ys[0]), textcoords="offset points", xytext=(6, 4), fontsize=8)
    prompts = {p[0] for pts in series.values() for p in pts}
    # a log axis helps only across a wide range of prompt lengths; over one or two close ones its ticks are
    # a lone decade label or none at all
    log_x = len(prompts) > 1 and max(prompts) >= 4 * min(prompts)
    for ax, ylabel in ((ax_tput, "output tok/s"), (ax_tpot, "median TPOT (ms)")):
        if log_x:
            ax.set_xscale("log")
        else:
            ax.set_xlim(0, 1.15 * max(prompts))
        ax.set_xlabel("mean prompt tokens" + (" (log scale)" if log_x else ""))
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    ax_tput.set_ylim(bottom=0)
    ax_tpot.set_ylim(bottom=0)
    ax_tput.legend(fontsize=7)
    return [
        Plot(
            "plot-throughput",
            "Output tok/s and TPOT against prompt length",
            "Each point is one scenario (mean prompt length of its successful requests); "
            "one line per config and concurrency.",
            _svg(fig, "plot-throughput"),
        )
    ]


def ttft_vs_decode(folder: ResultsFolder) -> list[Plot]:
    """Mean time to first token and mean decode time (E2E − TTFT) per scenario, stacked."""
    bars: list[tuple[str, Any, float, float]] = []  # (label, config, TTFT ms, decode ms)
    for s in of_kind(folder.records, "scenario"):
        ok = [
            r
            for r in s.get("requests") or []
            if r.get("ok") and r.get("ttft_s") is not None and r.get("e2e_s") is not None
        ]
        if ok:
            ttft = 1000 * sum(r["ttft_s"] for r in ok) / len(ok)
            decode = 1000 * sum(r["e2e_s"] - r["ttft_s"] for r in ok) / len(ok)
            bars.append((f"{s.get('config')} · {s.get('scenario')}", s.get("config"), ttft, decode))
    if not bars:
        return []
    colors = _colors(folder)
    fig = _figure(10, 0.9 + 0.32 * len(bars))
    ax = fig.subplots()
    ys = list(range(len(bars)))[::-1]
    ax.barh(ys, [b[2] for b in bars], color=[colors.get(b[1]) for b in bars], label="TTFT (prefill + queue)")
    ax.barh(
        ys,
        [b[3] for b in bars],
        left=[b[2] for b in bars],
        color=[colors.get(b[1]) for b in bars],
        alpha=0.35,
        hatch="//",
        label="decode (E2E − TTFT)",
    )
    ax.set_yticks(ys, [b[0] for b in bars], fontsize=8)
    ax.set_xlabel("mean per request (ms)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return [
        Plot(
            "plot-ttft-decode",
            "TTFT split from decode",
            "Solid: mean time to first token; hatched: mean decode time of the same requests.",
            _svg(fig, "plot-ttft-decode"),
        )
    ]


# --- quality -------------------------------------------------------------------------------------------


def accept_length(folder: ResultsFolder) -> list[Plot]:
    """Mean accept length ± SE per prompt set (and per serving scenario), one bar per config."""
    values: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)  # set → config → (mean, se)
    for r in folder.kind("accept_length"):
        a = r.get("accept_length") or {}
        if a.get("mean") is not None:
            values[str(r.get("set"))][str(r.get("config"))] = (a["mean"], a.get("se") or 0.0)
    for s in of_kind(folder.records, "scenario"):
        m = s.get("metrics") or {}
        if m.get("accept_length") is not None and m.get("accept_length_se") is not None:
            values[f"serving {s.get('scenario')}"][str(s.get("config"))] = (m["accept_length"], m["accept_length_se"])
    if not values:
        return []
    colors = _colors(folder)
    configs = [c for c in folder.configs if any(c in v for v in values.values())]
    sets = list(values)
    fig = _figure(10, 3.4)
    ax = fig.subplots()
    width = 0.8 / max(1, len(configs))
    for i, config in enumerate(configs):
        xs = [j + (i - (len(configs) - 1) / 2) * width for j, name in enumerate(sets) if config in values[name]]
        got = [values[name][config] for name in sets if config in values[name]]
        ax.bar(
            xs,
            [g[0] for g in got],
            width * 0.95,
            yerr=[g[1] for g in got],
            capsize=3,
            color=colors.get(config),
            label=config,
        )
    ax.set_xticks(range(len(sets)), sets, fontsize=8)
    ax.set_ylabel("accept length (tokens / verify step)")
    ax.axhline(1.0, color="#444", lw=0.8, ls=":")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return [
        Plot(
            "plot-accept-length",
            "Accept length per set (± 1 SE)",
            "Per-request accept length averaged per prompt set; the dotted line is 1 (no draft accepted).",
            _svg(fig, "plot-accept-length"),
        )
    ]


def bfcl_categories(folder: ResultsFolder) -> list[Plot]:
    """BFCL passed out of total per category, one bar group per config."""
    runs = [r for r in folder.kind("bfcl") if r.get("per_category")]
    if not runs:
        return []
    colors = _colors(folder)
    cats = sorted({c for r in runs for c in r["per_category"]})
    fig = _figure(10, 0.9 + 0.3 * len(cats) * len(runs))
    ax = fig.subplots()
    height = 0.8 / len(runs)
    for i, r in enumerate(runs):
        ys = [len(cats) - 1 - j - (i - (len(runs) - 1) / 2) * height for j in range(len(cats))]
        totals = [r["per_category"].get(c, {}).get("total", 0) for c in cats]
        passed = [r["per_category"].get(c, {}).get("passed", 0) for c in cats]
        color = colors.get(str(r.get("config")))
        ax.barh(ys, totals, height * 0.9, facecolor="none", edgecolor=color)
        ax.barh(ys, passed, height * 0.9, color=color, label=f"{r.get('config')} ({r.get('passed')}/{r.get('total')})")
        for y, p, t in zip(ys, passed, totals, strict=True):
            ax.text(t + 0.1, y, f"{p}/{t}", va="center", fontsize=7)
    ax.set_yticks(range(len(cats))[::-1], cats, fontsize=8)
    ax.set_xlabel("cases (filled: passed, outline: total)")
    ax.legend(fontsize=7, loc="lower right")
    return [
        Plot(
            "plot-bfcl",
            "BFCL passes per category",
            "Filled bars: cases passed; outlines: cases run.",
            _svg(fig, "plot-bfcl"),
        )
    ]


def calibration_curves(folder: ResultsFolder) -> list[tuple[str, str, list[tuple[str, Any]]]]:
    """Per calibrated decisions record: (config, dataset, [("before"|"after", array of (confidence, target))]).

    "After" re-applies the bench's cross-fitting (k folds from calibration.json, seed 0, as
    benches/test_decisions_cpu.py calls it) to the raw answers in ``<config>/decisions/<dataset>.answers.jsonl``.
    """
    import json

    import numpy as np

    from pytest_llmbench.evals.decisions.calibration import crossfit
    from pytest_llmbench.evals.decisions.metrics import scored
    from pytest_llmbench.evals.decisions.results import read_answers

    panels = []
    for rec in of_kind(folder.records, "decisions"):
        if rec.get("pass") or "calibrated" not in (rec.get("metrics") or {}):
            continue  # determinism passes are not calibrated
        config, dataset = str(rec.get("config")), str(rec.get("dataset"))
        answers = folder.path / config / "decisions" / f"{dataset}.answers.jsonl"
        cal = folder.path / config / "decisions" / "calibration.json"
        if not answers.is_file():
            continue
        raw = read_answers(answers)
        k = 2
        if cal.is_file():
            folds = (json.loads(cal.read_text()).get("temperatures") or {}).get("folds") or []
            k = max(2, len(folds))
        after = crossfit(raw, k=k, seed=0).decisions
        curves = []
        for name, decisions in (("before", raw), ("after", after)):
            pairs = [(m["confidence"], m["target"]) for _, m in scored(decisions) if m is not None]
            if pairs:
                curves.append((name, np.array(pairs)))
        if curves:
            panels.append((config, dataset, curves))
    return panels


def reliability(folder: ResultsFolder, bins: int | None = None) -> list[Plot]:
    """Reliability diagram per config's decisions: accuracy against confidence, before and after calibration."""
    import numpy as np

    from pytest_llmbench.evals.decisions.metrics import ECE_BINS
    from pytest_llmbench.evals.decisions.metrics import ece as ece_of

    bins = bins or ECE_BINS  # the same bins as the ECE the bench gates
    panels = calibration_curves(folder)
    if not panels:
        return []
    fig = _figure(4.2 * len(panels) + 0.5, 3.8)
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    edges = np.linspace(0, 1, bins + 1)
    for ax, (config, dataset, curves) in zip(axes, panels, strict=True):
        ax.plot([0, 1], [0, 1], color="#999", lw=0.8, ls="--", label="perfect calibration")
        for (name, arr), color in zip(curves, ("#d62728", "#1f77b4"), strict=False):  # one or two curves
            idx = np.clip(np.digitize(arr[:, 0], edges[1:-1], right=True), 0, bins - 1)
            xs, ys, ns = [], [], []
            for b in range(bins):
                sel = idx == b
                if sel.any():
                    xs.append(arr[sel, 0].mean())
                    ys.append(arr[sel, 1].mean())
                    ns.append(int(sel.sum()))
            ece = ece_of(arr[:, 0], arr[:, 1], bins)
            ax.plot(xs, ys, "-o", color=color, markersize=4, label=f"{name} (ECE {ece:.3f}, n={sum(ns)})")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence (top probability)")
        ax.set_ylabel("accuracy")
        ax.set_title(f"{config} · {dataset}", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    return [
        Plot(
            "plot-calibration",
            "Decision calibration (reliability diagram)",
            f"Accuracy per confidence bin ({bins} equal-width bins), raw answers and after the "
            "cross-fitted per-type temperatures.",
            _svg(fig, "plot-calibration"),
        )
    ]


# --- baselines -----------------------------------------------------------------------------------------


def history(folder: ResultsFolder, baselines_dir: Path | None) -> list[Plot]:
    """Per config: each gated metric's accepted history, the tolerance band and today's value."""
    from pytest_llmbench.gate.baselines import BaselineFileError, config_filename, load

    by_config: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for verdict in of_kind(folder.records, "verdict"):
        if verdict.get("baseline") is not None:
            by_config[str(verdict.get("config"))].append(dict(verdict))
    plots = []
    for config, verdicts in by_config.items():
        bf = None
        if baselines_dir is not None:
            try:
                bf = load(Path(baselines_dir) / config_filename(config), config)
            except BaselineFileError:
                bf = None  # the gate reported it; plot the verdict's own baseline
        ncols = min(4, len(verdicts))
        nrows = math.ceil(len(verdicts) / ncols)
        fig = _figure(2.6 * ncols, 1.9 * nrows + 0.3)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, v in zip(axes, verdicts, strict=False):  # the grid may have spare axes: hidden below
            entry = bf.get(v.get("runner"), str(v.get("test_key")), str(v.get("metric"))) if bf else None
            hist = list(entry.accepted) if entry else [v["baseline"]]
            xs = list(range(1, len(hist) + 1))
            tol = v.get("tolerance") or 0.0
            base = v["baseline"]
            ax.axhspan(base - tol, base + tol, color="#1f77b4", alpha=0.12, lw=0)
            ax.axhline(base, color="#1f77b4", lw=0.8)
            ax.plot(xs, hist, "o-", color="#555", markersize=3)
            today = len(hist) + 1
            ax.plot([today], [v["observed"]], "D", color=STATUS_COLOR.get(str(v.get("status")), "#000"), markersize=6)
            ax.set_xticks([*xs, today], [str(x) for x in xs] + ["today"], fontsize=6)
            ax.tick_params(axis="y", labelsize=6)
            test = str(v.get("test_key", "")).split("::")[-1]
            ax.set_title(f"{test}\n{v.get('metric')}", fontsize=7)
        for ax in axes[len(verdicts) :]:
            ax.set_visible(False)
        pid = f"plot-history-{_slug(config)}"
        plots.append(
            Plot(
                pid,
                f"Baseline history: {config}",
                "Grey: accepted values, oldest first; line and band: the baseline ± today's tolerance; "
                "diamond: today's value (red regressed, green improved, blue within noise).",
                _svg(fig, pid),
            )
        )
    return plots


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


def all_plots(folder: ResultsFolder, baselines_dir: Path | None = None) -> list[Plot]:
    """Every figure the folder has data for, in report order."""
    return [
        *throughput_vs_prompt(folder),
        *ttft_vs_decode(folder),
        *accept_length(folder),
        *bfcl_categories(folder),
        *reliability(folder),
        *history(folder, baselines_dir),
    ]
