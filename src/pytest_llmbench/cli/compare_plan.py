"""``python -m pytest_llmbench compare-plan RESULTS_DIR --budget 20m``: the plan table of a comparison
session, from a previous session's records, without a server or a GPU.

Why: a nightly job has a GPU-hour; what it buys (units of how many rounds, how many, the smallest change
each scenario catches) is known before the job starts from what the last one measured: its arm starts
(``arm_start``), its rounds' wall seconds and log ratios (``comparison_block``, with the unit each round
counted in), and so the noise between starts and within one (compare/dryrun.py ``dry_run``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_llmbench.compare.dryrun import dry_run, placement_tables
from pytest_llmbench.compare.margins import sizes_for
from pytest_llmbench.compare.placement import Runner
from pytest_llmbench.compare.plan import Target
from pytest_llmbench.compare.spend import parse_seconds
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.records.results import iter_records


def _fraction(text: str) -> float:
    raw = text.strip()
    try:
        value = float(raw.removesuffix("%")) / (100 if raw.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction (0.01 or 1%)") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be in [0, 1)")
    return value


def _seconds(text: str) -> float:
    try:
        value = parse_seconds(text, "duration")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if value is None:
        raise argparse.ArgumentTypeError("a budget must be a duration, not 'none'")
    return value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmbench compare-plan",
        description="The plan table a comparison session would print (units of how many rounds, how many, "
        "~how long, the smallest change caught with 95%% power), from a previous session's records, "
        "without a server.",
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    parser.add_argument("--budget", type=_seconds, required=True, help="the session's budget: 1200, 20m, 1.5h")
    parser.add_argument("--detect", default="3%", help="the change to catch (output_throughput; default 3%%)")
    parser.add_argument("--ignore", default="1%", help="the change to ignore (default 1%%)")
    parser.add_argument("--alpha", type=float, default=0.01, help="per-comparison false-alarm rate (default 0.01)")
    parser.add_argument(
        "--start-s",
        type=float,
        default=None,
        help="plan as if each arm's start took this long (what would a 60-s start cost?)",
    )
    parser.add_argument(
        "--sd-between",
        type=_fraction,
        default=None,
        help="a fresh pair's offset SD (1%%) where the records kept one pair (or to override the measured one)",
    )
    parser.add_argument("--unit-rounds", type=int, default=1, help="rounds per pair in records without a unit")
    parser.add_argument("--concurrent", action="store_true", help="both arms start at once (the longer start)")
    parser.add_argument("--session", default=None, help="the compare_session id (default: the folder's last one)")
    parser.add_argument(
        "--placements",
        metavar="G/N",
        default=None,
        help="also price every arm placement (shared, per-block, disjoint interleaved or parallel) for a config "
        "of G GPUs per arm on an N-GPU runner, e.g. 2/8 (issue 57)",
    )
    parser.add_argument("--both-fit", action="store_true", help="with --placements: both arms fit on G GPUs")
    parser.add_argument(
        "--starts", default=None, help="with --placements: start seconds per arm to price, e.g. 60,180,600"
    )
    parser.add_argument("--by", choices=("gpu", "wall"), default="gpu", help="cheapest by GPU-seconds or wall time")
    args = parser.parse_args(argv)
    if not args.results_dir.is_dir():
        print(f"compare-plan: {args.results_dir} is not a results folder", file=sys.stderr)
        return 1
    try:
        records = list(iter_records(args.results_dir))
        session = args.session or _last_session(records)
        target = Target(
            sizes_for("output_throughput", {"output_throughput": args.detect}, {"output_throughput": args.ignore}),
            args.alpha,
        )
        alloc = dry_run(
            records,
            args.budget,
            target,
            unit_rounds=args.unit_rounds,
            sd_between=args.sd_between,
            start_s_per_arm=args.start_s,
            concurrent=args.concurrent,
            session=session,
        )
    except (ValueError, OSError) as e:
        print(f"compare-plan: {args.results_dir}: {e}", file=sys.stderr)
        return 1
    print(f"from {args.results_dir}" + (f" (session {session})" if session else ""))
    for line in alloc.table():
        print(line)
    if args.placements:
        try:
            gpus, _, total = args.placements.partition("/")
            runner = Runner(int(gpus), int(total), both_fit=args.both_fit)
            starts = [float(s) for s in args.starts.split(",")] if args.starts else [args.start_s]
            lines = placement_tables(
                records,
                target,
                runner,
                starts,
                unit_rounds=args.unit_rounds,
                sd_between=args.sd_between,
                session=session,
                by=args.by,
            )
        except ValueError as e:
            print(f"compare-plan: --placements {args.placements!r} --starts {args.starts!r}: {e}", file=sys.stderr)
            return 1
        for line in lines:
            print(line)
    return 0


def _last_session(records: list[dict[str, object]]) -> str | None:
    """The compare_session of the folder's last comparison_block (a reused folder holds several)."""
    for r in reversed(of_kind(records, "comparison_block")):
        if isinstance(r.get("compare_session"), str):
            return str(r["compare_session"])
    return None
