"""report.html: one self-contained page (inline SVG figures, inline CSS, no scripts) for a results folder.

Layout lives in ``templates/report.html.j2`` (Jinja2, autoescaped: config names, rules and test ids are
user text); what goes in it comes from :mod:`rows` (tables) and :mod:`plots` (figures).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.report import rows as R

NUMERIC = {
    "baseline",
    "observed",
    "delta %",
    "tolerance",
    "p",
    "q",
    "reference",
    "candidate",
    "ratio",
    "estimate",
    "interval",
    "rounds",
    "ok/n",
    "prompt tok",
    "accept len",
    "startup s",
    "out tok/s",
    "req/s",
    "TTFT med ms",
    "TTFT p99 ms",
    "TPOT med ms",
    "ITL p99 ms",
    "A",
    "B",
    "B / A",
    "95% interval",
    "rules out",
    "could catch",
}
INSTALL_HINT = "report.html needs matplotlib and jinja2: pip install 'pytest-llmbench[report]'"


@dataclass
class Section:
    id: str
    title: str
    table: R.Table | None = None
    plots: list = field(default_factory=list)


def _environment():
    try:
        import jinja2
        import matplotlib  # noqa: F401  (fail here, with the hint, rather than mid-render)
    except ImportError as e:
        raise RuntimeError(f"{INSTALL_HINT} ({e})") from None
    return jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_llmbench.report", "templates"),
        autoescape=True,
        trim_blocks=False,
        lstrip_blocks=False,
    )


def _version() -> str:
    """The installed distribution's version (read from its metadata, so report/ need not import the package
    root, which imports report/)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-llmbench")
    except PackageNotFoundError:
        return "(not installed)"


def render_page(
    title: str,
    folder_label: str,
    sections: list[Section],
    *,
    banner: str,
    tone: str,
    configs: list[str],
    n_records: int,
    baselines: str | None = None,
    heading: str = "llmbench report",
) -> str:
    """The page shell shared by ``report``, ``compare --html`` and ``history``; ``tone`` colours the banner (bad,
    warn, neutral, good: records/verdict.py); ``heading`` is the page's title and first heading."""
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        heading=heading,
        folder=folder_label,
        sections=[s for s in sections if s.table or s.plots],
        banner=banner,
        tone=tone,
        configs=configs,
        n_records=n_records,
        baselines=baselines,
        numeric=NUMERIC,
        version=_version(),
    )


def render(folder: ResultsFolder, baselines_dir: Path | None = None) -> str:
    from pytest_llmbench.report import forest_plot
    from pytest_llmbench.report import plots as P
    from pytest_llmbench.report.pareto import pareto_plots

    _environment()
    verdicts = R.verdict_table(folder)
    sections = [
        Section("verdicts", "Verdicts (regressions first)", verdicts if verdicts.rows else None),
        Section("comparisons", "Comparisons", R.comparison_table(folder), forest_plot.comparison_forest(folder)),
        Section(
            "serving",
            "Serving",
            R.scenario_table(folder),
            [*P.throughput_vs_prompt(folder), *P.ttft_vs_decode(folder), *pareto_plots(folder)],
        ),
        Section(
            "quality",
            "Quality",
            R.eval_table(folder),
            [*P.accept_length(folder), *P.bfcl_categories(folder), *P.reliability(folder)],
        ),
        Section("history", "Baseline history", None, P.history(folder, baselines_dir)),
        Section("servers", "Servers and provenance", R.facts_table(folder)),
    ]
    # --- why (issue 59): the busy host, what changed between the arms, and their timelines ---
    from pytest_llmbench.report.timeline_plot import timeline_plots
    from pytest_llmbench.report.what_changed import tables as why

    timelines = Section("timelines", "Timelines (reference vs candidate)", None, timeline_plots(folder))
    sections[2:2] = [*(Section(f"why-{i}", t.title, t) for i, t in enumerate(why(folder))), timelines]
    verdict = folder.session_verdict()  # the same line as summary.md's first and the terminal's last
    # --- bisect (issue 39): a bisect folder's steps, builds and step plot (its finding is in the verdict) ---
    from pytest_llmbench.report import bisect as B

    for i, table in enumerate(B.bisect_tables(folder)):
        sections.insert(i, Section(f"bisect-{i}", table.title, table, B.step_plot(folder) if i == 0 else []))
    return render_page(
        folder.path.name,
        str(folder.path),
        sections,
        banner=verdict.line(),
        tone=verdict.tone,
        configs=folder.configs,
        n_records=len(folder.records),
        baselines=str(baselines_dir) if baselines_dir else None,
    )


def write(folder: ResultsFolder, baselines_dir: Path | None = None, path: Path | None = None) -> Path:
    path = Path(path) if path else folder.path / "report.html"
    write_atomic(path, render(folder, baselines_dir))  # a full disk leaves the old page, never half of one
    return path
