"""summary.md: the verdicts and the numbers of a results folder as GitHub-flavoured markdown.

What a CI page shows (``$GITHUB_STEP_SUMMARY``) and what a reviewer pastes into a PR: regressions first,
then comparisons, scenarios, evals and the servers they ran on. The first line is the session verdict. No plots, so it needs no plotting stack.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.report import rows as R

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(table: R.Table) -> str:
    lines = [f"### {table.title}", ""]
    if table.note:
        lines += [table.note, ""]
    lines.append("| " + " | ".join(_cell(h) for h in table.header) + " |")
    lines.append("|" + "|".join("---" for _ in table.header) + "|")
    for i, row in enumerate(table.rows):
        cells = [_cell(c) for c in row]
        if table.kinds and table.kinds[i] in ("REGRESSED", "regressed"):
            cells[0] = f"**{cells[0]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def headline(folder: ResultsFolder) -> str:
    """The first line: the session verdict (records/verdict.py), the same words as the terminal's."""
    verdict = folder.session_verdict()
    return f"## {verdict.mark} {verdict.line()}"


def render(folder: ResultsFolder) -> str:
    """The whole summary; sections without data are left out."""
    verdicts = R.verdict_table(folder)
    parts = [headline(folder), "", f"Results: `{folder.path}`"]
    if verdicts.rows:
        parts += ["", markdown_table(verdicts)]
    from pytest_llmbench.report.what_changed import tables as why  # issue 59: busy host, what changed

    for table in (
        R.comparison_table(folder),
        *why(folder),
        R.scenario_table(folder),
        R.eval_table(folder),
        R.facts_table(folder),
    ):
        if table is not None and table.rows:
            parts += ["", markdown_table(table)]
    # --- bisect (issue 39): a bisect folder's steps and builds ---
    from pytest_llmbench.report.bisect import bisect_tables

    # its finding is in the first line already (records/verdict.py reads the bisect record)
    parts += [p for table in bisect_tables(folder) for p in ("", markdown_table(table))]
    return "\n".join(parts) + "\n"


def write(folder: ResultsFolder, path: Path | None = None) -> Path:
    """Write summary.md (default: into the results folder) and return its path."""
    path = Path(path) if path else folder.path / "summary.md"
    write_atomic(path, render(folder))  # a full disk leaves the old file, never half of a new one
    return path


def append_to_step_summary(text: str, environ: dict[str, str] | None = None) -> Path | None:
    """Append ``text`` to ``$GITHUB_STEP_SUMMARY`` when it is set (GitHub Actions); the file it names."""
    target = (os.environ if environ is None else environ).get(SUMMARY_ENV)
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    return Path(target)
