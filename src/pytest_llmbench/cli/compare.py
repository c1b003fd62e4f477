"""``python -m pytest_llmbench compare DIR_A DIR_B``: the same scenarios of two runs side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_llmbench.records.folder import ResultsFolderError, read_folder
from pytest_llmbench.report.compare import compare, html_page, markdown


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmbench compare",
        description="Ratios B / A of two runs, with paired 95%% intervals over the prompts or cases both kept; "
        "timing rows are descriptive (no verdict: two sessions have no rounds, a host shift between them is "
        "in the numbers; gate timing with the in-session comparison), quality rows are judged per case. "
        "Markdown to stdout.",
    )
    parser.add_argument("dir_a", type=Path, metavar="DIR_A")
    parser.add_argument("dir_b", type=Path, metavar="DIR_B")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write the comparison as an HTML page")
    args = parser.parse_args(argv)
    try:
        result = compare(read_folder(args.dir_a), read_folder(args.dir_b))
    except ResultsFolderError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 1
    if not result.rows:
        print(f"compare: {args.dir_a} and {args.dir_b} have no scenario or eval in common", file=sys.stderr)
        return 1
    sys.stdout.write(markdown(result))
    if args.html:
        try:
            args.html.write_text(html_page(result), encoding="utf-8")
        except RuntimeError as e:  # plotting stack missing
            print(f"compare: {e}", file=sys.stderr)
            return 1
        print(f"\nhtml: {args.html}", file=sys.stderr)
    return 0
