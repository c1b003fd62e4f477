"""``python -m pytest_llmbench merge``: one results folder (or baselines folder) from a sharded run.

    python -m pytest_llmbench merge OUT SHARD_DIR...                        # results folders
    python -m pytest_llmbench merge --baselines OUT SHARD_BASELINES... [--base DIR]

The logic lives in ``report.merge`` (results) and ``gate.merge`` (baselines); this module only parses
arguments and prints what happened.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_llmbench merge",
        description="Merge the results folders of --llmbench-shard runs into one folder shaped like a single "
        "run's; with --baselines, merge the shards' baseline folders instead.",
    )
    p.add_argument(
        "out",
        metavar="OUT",
        type=Path,
        help="merged folder to write (results: must be absent or empty; baselines: updated in place "
        "unless --base is given)",
    )
    p.add_argument("dirs", metavar="DIR", type=Path, nargs="+", help="one folder per shard")
    p.add_argument(
        "--baselines",
        action="store_true",
        help="the folders are baseline folders written by --update-baselines on each shard",
    )
    p.add_argument(
        "--base",
        type=Path,
        default=None,
        metavar="DIR",
        help="with --baselines: the baselines every shard started from (default: OUT as it is now)",
    )
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.base is not None and not args.baselines:
        print("merge: --base only applies with --baselines", file=sys.stderr)
        return 2
    if args.baselines:
        return _baselines(args)
    from pytest_llmbench.report.merge import MergeError, merge_results

    try:
        manifest = merge_results(args.out, args.dirs)
    except MergeError as e:
        print(f"merge: {e}", file=sys.stderr)
        return 1
    for src in manifest["sources"]:
        shards = ", ".join(sorted({o["shard"] for o in src["origins"] if o["shard"]})) or "unsharded"
        print(f"{src['dir']}: {src['records']} records, shard {shards}: {', '.join(src['configs']) or '(none)'}")
    if manifest["missing_shards"]:
        print(f"merge: WARNING no results from shard(s) {', '.join(manifest['missing_shards'])}", file=sys.stderr)
    print(f"merged into {args.out}")
    return 0


def _baselines(args: argparse.Namespace) -> int:
    from pytest_llmbench.gate.merge import BaselineMergeError, merge_baselines

    try:
        changes = merge_baselines(args.out, args.dirs, base=args.base)
    except BaselineMergeError as e:
        print(f"merge: {e}", file=sys.stderr)
        return 1
    for c in changes:
        print(f"{c.describe()}  (from {c.source})")
    print(f"{len(changes)} baseline change(s) merged into {args.out}")
    return 0
