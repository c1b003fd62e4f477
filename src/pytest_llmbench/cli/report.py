"""``python -m pytest_llmbench report RESULTS_DIR``: write report.html and summary.md into the folder.

It prints the session verdict (records/verdict.py), the line the pytest run ended with. With ``--check``
its exit status is the verdict's too (1 for a run that regressed or failed), so a CI step that only
reads a merged folder goes red as the run did; without it, 0 means the files were written (the fleet
recipes in docs/fleet build the report first and fail on the shards' own statuses after).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_llmbench.records.folder import ResultsFolderError
from pytest_llmbench.report.build import write_report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmbench report",
        description="Write RESULTS_DIR/report.html and RESULTS_DIR/summary.md and print the run's verdict.",
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    parser.add_argument(
        "--baselines-dir",
        type=Path,
        default=Path("baselines"),
        help="baseline files for the history plots (default: ./baselines; skipped if absent)",
    )
    parser.add_argument(
        "--no-step-summary",
        action="store_true",
        help="do not append summary.md to $GITHUB_STEP_SUMMARY even when it is set",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit with the run's verdict: 1 when it regressed or failed (as the pytest run did), else 0",
    )
    args = parser.parse_args(argv)
    try:
        written = write_report(args.results_dir, args.baselines_dir, step_summary=not args.no_step_summary)
    except ResultsFolderError as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    print(f"summary: {written.summary}")
    if written.step_summary:
        print(f"appended to $GITHUB_STEP_SUMMARY: {written.step_summary}")
    if written.html is None:
        print(f"report: {written.html_error}", file=sys.stderr)
        return 1
    print(f"report:  {written.html}")
    verdict = written.verdict
    if verdict is None:
        return 0
    print(verdict.line())
    return verdict.exit_status if args.check else 0
