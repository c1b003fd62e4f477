"""``python -m pytest_llmbench history RESULTS_DIRS…``: change points over many nights' results folders.

Writes history.md (and $GITHUB_STEP_SUMMARY), history.html (the trend page) and change_points.jsonl into
``--out``; exits 1 with ``--fail-on-new`` when a change for the worse was first reported in the last ``--last``
nights (the last night itself is tested on its own, so a step can fail the night it happens).

An argument may also be a nightly store (nightly/store.py): its URL (``file://``, ``s3://``, ``git+…#branch``)
or the local folder that holds its ``nights/``; its complete nights are read as results folders (a remote
store's are copied under ``--out``/store-nights first).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_llmbench.history.analysis import WEIGHTED, history_report
from pytest_llmbench.history.changepoints import DEFAULT_MAX_P, DEFAULT_WINDOW
from pytest_llmbench.history.series import HistoryError, build_series, expand, read_nights
from pytest_llmbench.nightly.store import NIGHTS, StoreError, open_store
from pytest_llmbench.records.folder import ResultsFolderError
from pytest_llmbench.report import trend_summary
from pytest_llmbench.report.summary import append_to_step_summary


def nights_count(text: str) -> int:
    """``--last K``: a whole number of nights, at least 1 (0 or fewer would make no change point new)."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of nights") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"{k} nights: give 1 or more (the nights a new change point is looked for in)")
    return k


def is_store(text: str) -> bool:
    """A store URL, or a folder laid out as a store (``nights/`` and no results.jsonl of its own)."""
    if "://" in text or text.startswith("git+"):
        return True
    p = Path(text)
    return (p / NIGHTS).is_dir() and not (p / "results.jsonl").exists()


def night_folders(args: list[str], fetch_to: Path) -> list[Path]:
    """Results folders from the arguments: folders and globs as they are, each store's nights in their order."""
    out: list[Path] = []
    for text in args:
        if is_store(text):
            store = open_store(text)
            folders = store.fetch_nights(fetch_to)
            if not folders:
                raise HistoryError(f"store {text}: no complete night in {NIGHTS}/")
            out += folders
        else:
            out += expand([text])
    return list(dict.fromkeys(out))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmbench history",
        description="Change points over the results folders of many nights (one series per runner, config, "
        "test and metric; E-divisive means with a t-test, as Apache Otava).",
    )
    parser.add_argument(
        "results_dirs",
        nargs="+",
        metavar="RESULTS_DIR",
        help="results folders or globs, or a nightly store (its URL or folder: every night in it)",
    )
    parser.add_argument("--out", type=Path, default=Path("history"), help="folder for the outputs (./history)")
    parser.add_argument(
        "--last",
        type=nights_count,
        default=1,
        metavar="K",
        help="'new' = first reported in the last K nights (>= 1; default 1: tonight)",
    )
    parser.add_argument("--fail-on-new", action="store_true", help="exit 1 when a new change point is for the worse")
    parser.add_argument(
        "--max-p",
        type=float,
        default=DEFAULT_MAX_P,
        help=f"t-test p threshold per family of series, split evenly over its series ({DEFAULT_MAX_P:g})",
    )
    parser.add_argument(
        "--per-series",
        action="store_true",
        help="each series at --max-p itself (no adjustment across series: more false change points per report)",
    )
    parser.add_argument(
        "--min-change",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="ignore changes smaller than this (0.02 = 2%%)",
    )
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW, help=f"nights per window ({DEFAULT_WINDOW})")
    parser.add_argument(
        "--weighted",
        action=argparse.BooleanOptionalAction,
        default=WEIGHTED,
        help="weight a ratio series' nights by their comparisons' 1/SE²",
    )
    parser.add_argument("--no-html", action="store_true", help="skip history.html (no plotting stack needed)")
    parser.add_argument("--no-step-summary", action="store_true", help="do not append to $GITHUB_STEP_SUMMARY")
    args = parser.parse_args(argv)
    try:
        nights = read_nights(night_folders(args.results_dirs, args.out / "store-nights"))
    except (HistoryError, ResultsFolderError, StoreError) as e:
        print(f"history: {e}", file=sys.stderr)
        return 2
    series = build_series(nights)
    result = history_report(
        series,
        nights,
        last=args.last,
        max_p=args.max_p,
        min_magnitude=args.min_change,
        window=args.window,
        weighted=args.weighted,
        per_family=not args.per_series,
    )
    findings, new = result.findings, result.new
    args.out.mkdir(parents=True, exist_ok=True)
    md = trend_summary.render(series, nights, findings, new, args.last, families=result.families, max_p=args.max_p)
    (args.out / "history.md").write_text(md, encoding="utf-8")
    with open(args.out / "change_points.jsonl", "w", encoding="utf-8") as f:
        for finding in findings:
            f.write(json.dumps({**finding.as_record(), "new": finding in new}, sort_keys=True) + "\n")
    print(md, end="")
    if not args.no_step_summary and (step := append_to_step_summary(md)):
        print(f"appended to $GITHUB_STEP_SUMMARY: {step}")
    if not args.no_html:
        try:
            from pytest_llmbench.report import trend_page

            page = trend_page.write(args.out / "history.html", series, nights, findings, new, args.last)
            print(f"trend page: {page}")
        except RuntimeError as e:  # the plotting stack's install hint
            print(f"history: {e}", file=sys.stderr)
    return 1 if args.fail_on_new and any(f.worse for f in new) else 0
