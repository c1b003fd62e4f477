"""Write a results folder's report.html and summary.md: the one entry point the CLI and the plugin share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_llmbench.report import html, summary
from pytest_llmbench.report.folder import read_folder
from pytest_llmbench.report.headline import SessionVerdict


@dataclass(frozen=True)
class Written:
    summary: Path
    html: Path | None
    html_error: str | None = None  # why report.html was not written (plotting stack missing)
    step_summary: Path | None = None  # $GITHUB_STEP_SUMMARY, when the summary was appended to it
    verdict: SessionVerdict | None = None  # what both files' headlines say


def write_report(
    results_dir: Path | str, baselines_dir: Path | str | None = None, *, step_summary: bool = True
) -> Written:
    """summary.md always; report.html when matplotlib and jinja2 are installed; append to CI's summary."""
    folder = read_folder(results_dir)
    md = summary.write(folder)
    step = summary.append_to_step_summary(md.read_text(encoding="utf-8")) if step_summary else None
    base = Path(baselines_dir) if baselines_dir is not None else None
    try:
        page = html.write(folder, base if base is not None and base.is_dir() else None)
    except RuntimeError as e:  # the install hint
        return Written(md, None, str(e), step, folder.session_verdict())
    return Written(md, page, None, step, folder.session_verdict())
