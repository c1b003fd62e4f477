"""Write a results folder's report.html and summary.md: the one entry point the CLI and the plugin share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.records.verdict import SessionVerdict
from pytest_llmbench.report import html, summary


@dataclass(frozen=True)
class Written:
    summary: Path
    html: Path | None
    html_error: str | None = None  # why report.html was not written (plotting stack missing)
    step_summary: Path | None = None  # $GITHUB_STEP_SUMMARY, when the summary was appended to it
    verdict: SessionVerdict | None = None  # what both files' headlines say


def write_report(
    results_dir: Path | str,
    baselines_dir: Path | str | None = None,
    *,
    step_summary: bool = True,
    session: str | None = None,
    suffix: str = "",
) -> Written:
    """summary.md always; report.html when matplotlib and jinja2 are installed; append to CI's summary.
    ``session``: one session's records only; ``suffix`` goes before the extension (``summary<suffix>.md``)."""
    folder = read_folder(results_dir, session=session)
    md = summary.write(folder, folder.path / f"summary{suffix}.md")
    step = summary.append_to_step_summary(md.read_text(encoding="utf-8")) if step_summary else None
    base = Path(baselines_dir) if baselines_dir is not None else None
    try:
        page = html.write(
            folder, base if base is not None and base.is_dir() else None, folder.path / f"report{suffix}.html"
        )
    except RuntimeError as e:  # the install hint
        return Written(md, None, str(e), step, folder.session_verdict())
    return Written(md, page, None, step, folder.session_verdict())
