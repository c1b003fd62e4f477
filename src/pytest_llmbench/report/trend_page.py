"""history.html: the trend page of many nights, in report.html's shell (one self-contained page, inline SVG).

One plot per series, series with change points first: the nights' values, the level of each segment
between change points, a dashed line at each change point, each night's stored-gate verdict as the marker
colour, and the in-session comparison's verdict of that night (when it ran one) as a triangle over it. A
ratio series (tonight / pinned reference) draws each night's 95% interval and a dotted line where the
reference was re-pinned (a new segment, never a change point).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from pytest_llmbench.history.analysis import Finding, repinned
from pytest_llmbench.history.series import NOT_COMPARABLE, RATIO, Night, Series
from pytest_llmbench.report import html
from pytest_llmbench.report.plots import STATUS_COLOR, Plot, _figure, _slug, _svg
from pytest_llmbench.report.trend_summary import findings_table, headline

COMPARISON_COLOR = {"regressed": "#d62728", "improved": "#2ca02c", "equivalent": "#1f77b4"}


#: a metric name's last word → its unit (sglang bench_serving names: median_tpot_ms, output_throughput, …)
UNITS = (
    (("_ms",), "ms"),
    (("_s", "_seconds"), "s"),
    (("_gb",), "GB"),
    (("request_throughput",), "requests/s"),
    (("throughput", "tokens_per_s", "_tps"), "tokens/s"),
    (("accept_length",), "tokens per step"),
    (("pass_rate", "accuracy", "correct"), "fraction"),
)


def y_label(s: Series) -> str:
    """A ratio series is a ratio (tonight / the pinned reference, no unit); a value series says its unit."""
    if s.key.kind == RATIO:
        return f"{s.key.metric}: ratio to reference (×)"
    name = s.key.metric.lower()
    for ends, unit in UNITS:
        if any(name.endswith(e) or (not e.startswith("_") and e in name) for e in ends):
            return f"{s.key.metric} ({unit})"
    return f"{s.key.metric} (as measured)"


def series_plot(s: Series, findings: Sequence[Finding], new: Sequence[Finding], index: int) -> Plot:
    fig = _figure(9.0, 2.8)
    ax = fig.subplots()
    xs = list(range(len(s.points)))
    ax.plot(xs, s.values, "-", color="#999", lw=0.8)
    for status in dict.fromkeys(p.status for p in s.points):
        pts = [(x, p.value) for x, p in zip(xs, s.points, strict=True) if p.status == status]
        color = STATUS_COLOR.get(str(status), "#555")
        ax.plot(*zip(*pts, strict=True), "o", color=color, markersize=3.5, label=str(status or "no verdict"))
    with_se = [(x, p.value, p.se) for x, p in zip(xs, s.points, strict=True) if p.se]
    if with_se:  # the comparison's own 95% interval of each night (its SE on the log scale)
        lows = [v - v * math.exp(-1.96 * se) for _, v, se in with_se]
        highs = [v * math.exp(1.96 * se) - v for _, v, se in with_se]
        xe, ye = [x for x, _, _ in with_se], [v for _, v, _ in with_se]
        ax.errorbar(xe, ye, yerr=[lows, highs], fmt="none", ecolor="#bbb", elinewidth=0.8, capsize=1.5)
    compared = [(x, p) for x, p in zip(xs, s.points, strict=True) if p.comparison]
    for verdict in dict.fromkeys(str(p.comparison) for _, p in compared):
        # in a strip above the axes (x: the night, y: past the frame), never over a night's dot: drawn at the
        # series' maximum they hid the highest nights (issue 54's screenshots)
        xv = [x for x, p in compared if str(p.comparison) == verdict]
        ax.plot(xv, [1.05] * len(xv), "v", color=COMPARISON_COLOR.get(verdict, "#7f7f7f"), markersize=6,
                transform=ax.get_xaxis_transform(), clip_on=False, label=f"comparison: {verdict}")  # fmt: skip
    pins = repinned(s)
    for x in pins:
        ax.axvline(x - 0.5, color="#7f7f7f", ls=":", lw=1.2)
        ax.annotate("re-pinned", (x - 0.5, 0.0), xycoords=("data", "axes fraction"), fontsize=7, va="bottom")
    cuts = sorted({f.change.index for f in findings} | set(pins))
    for lo, hi in pairwise([0, *cuts, len(xs)]):  # each segment's level over its judged nights, as detected
        logs = [math.log(p.value) for p in s.points[lo:hi] if p.status != NOT_COMPARABLE and p.value > 0]
        if logs:
            ax.hlines(math.exp(sum(logs) / len(logs)), lo - 0.3, hi - 0.7, color="#1b1f24", lw=1.4)
    for f in findings:
        ax.axvline(f.change.index - 0.5, color="#d62728" if f.worse else "#2ca02c", ls="--", lw=1.2)
        label = f"×{f.change.ratio:.3f}" + (" new" if f in new else "")
        ax.annotate(label, (f.change.index - 0.5, 1.0), xycoords=("data", "axes fraction"), fontsize=7, va="top")
    step = max(1, len(xs) // 12)
    ax.set_xticks(xs[::step], [s.points[x].night for x in xs[::step]], fontsize=6, rotation=30, ha="right")
    ax.tick_params(axis="y", labelsize=7)
    # on two lines: "mean_tpot_ms: ratio to reference (×)" on one ran past the figure's top and was cut
    ax.set_ylabel(textwrap.fill(y_label(s), 22), fontsize=7)
    ax.set_xlabel("night (results folder)", fontsize=7)
    # beside the axes, never over the nights
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, borderaxespad=0.0)
    pid = f"plot-trend-{index}-{_slug(s.key.metric)}"
    caption = (
        "Dots: each night's value, coloured by its stored-gate verdict (not comparable: the host was busy, left "
        "out of the detection); black: the level between change points; "
        "dashed: a change point (red worse, green better), labelled with after/before"
        + (
            "; triangles above the plot: that night's in-session comparison (red regressed, blue equivalent, grey inconclusive)"
            if compared
            else ""
        )
        + ("; bars: each night's 95% interval (its comparison's SE, or its starts' SD/√k)" if with_se else "")
        + ("; dotted: the reference was re-pinned (a new segment)" if pins else "")
        + "."
    )
    return Plot(pid, s.key.label(), caption, _svg(fig, pid))


def render(
    series: Sequence[Series], nights: Sequence[Night], findings: Sequence[Finding], new: Sequence[Finding], last: int
) -> str:
    by_series: dict[int, list[Finding]] = {}
    for f in findings:
        by_series.setdefault(id(f.series), []).append(f)
    ordered = sorted(
        (s for s in series if len(s.points) >= 2),
        key=lambda s: (
            not any(f.worse and f in new for f in by_series.get(id(s), [])),
            not by_series.get(id(s)),
        ),
    )
    plots = [series_plot(s, by_series.get(id(s), []), new, i) for i, s in enumerate(ordered)]
    table = findings_table(findings, "Change points")
    head, tone = headline(series, new, last)
    banner = (
        head.split(" ", 1)[1] + f"; {len(findings)} change point(s) over {len(nights)} nights and {len(series)} series."
    )
    span = f"{nights[0].name} … {nights[-1].name}" if nights else "no nights"
    return html.render_page(
        f"history of {len(nights)} nights",
        f"{len(nights)} nights: {span}",
        [
            html.Section("changes", "Change points", table if table.rows else None),
            html.Section("trends", "Trends, one per series", None, plots),
        ],
        banner=banner,
        tone=tone if series else "neutral",  # nothing read is never green
        configs=sorted({s.key.config for s in series}),
        n_records=sum(len(n.folder.records) for n in nights),
        heading="llmbench history",
    )


def write(
    path: Path,
    series: Sequence[Series],
    nights: Sequence[Night],
    findings: Sequence[Finding],
    new: Sequence[Finding],
    last: int,
) -> Path:
    path.write_text(render(series, nights, findings, new, last), encoding="utf-8")
    return path
