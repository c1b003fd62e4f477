"""``python -m pytest_llmbench bench-serving RESULTS_DIR OUT.jsonl``: a session's scenarios as sglang bench_serving
JSONL lines (records/bench_serving.py), for the dashboards that read them. Reading such a file needs no
command: ``compare`` and ``history`` take the file where they take a results folder."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pytest_llmbench.records.bench_serving import export_lines
from pytest_llmbench.records.folder import ResultsFolderError, read_folder
from pytest_llmbench.records.read import of_kind


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmbench bench-serving",
        description="Write every scenario of a results folder as one sglang bench_serving JSONL line (its key "
        "names; tag = config/scenario), per-request lists as --output-details writes them unless --no-details.",
    )
    parser.add_argument("results", type=Path, metavar="RESULTS_DIR")
    parser.add_argument("out", type=Path, metavar="OUT.jsonl")
    parser.add_argument("--no-details", action="store_true", help="leave out the per-request lists")
    args = parser.parse_args(argv)
    try:
        scenarios = of_kind(read_folder(args.results).records, "scenario")
    except ResultsFolderError as e:
        print(f"bench-serving: {e}", file=sys.stderr)
        return 1
    if not scenarios:
        print(f"bench-serving: {args.results}: no scenario records to export", file=sys.stderr)
        return 1
    part = args.out.with_name(f"{args.out.name}.{os.getpid()}.part")
    try:
        part.write_text(export_lines(scenarios, details=not args.no_details), encoding="utf-8")
        part.replace(args.out)  # whole or not at all: a dashboard never reads half a file
    except OSError as e:
        print(f"bench-serving: cannot write {args.out}: {e}", file=sys.stderr)
        return 1
    print(f"bench-serving: {len(scenarios)} lines to {args.out}", file=sys.stderr)
    return 0
