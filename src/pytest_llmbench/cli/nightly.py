"""``python -m pytest_llmbench nightly``: gate tonight's build, keep the night, and name the culprit.

    python -m pytest_llmbench nightly --reference lmsysorg/sglang:v0.5.9 \\
        --candidate lmsysorg/sglang:nightly-dev-20261205-1a2b3c4d --store git+https://github.com/org/repo.git#nights \\
        --budget 40m --bisect-budget 60m --candidates-from hook -- benches/ -m nvfp4

Everything after ``--`` is the bench selection, the same every night. The job (nightly/job.py) runs the
in-session comparison, appends the night to the store, runs ``history`` over every stored night (trend page
and summary in ``--out``), bisects the pinned builds between the last good night and tonight when tonight
regressed or a new change point is for the worse, and ends with one headline. Exit status: 0 PASSED (or
INCONCLUSIVE), 1 REGRESSED or FAILED, 2 a usage, store or build-list error.

    python -m pytest_llmbench nightly history --store URL [history options]

runs ``history`` over the stored nights (a branch or a bucket is fetched into the cache first).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from pytest_llmbench import interrupts, redact
from pytest_llmbench.compare.spend import parse_seconds
from pytest_llmbench.nightly.candidates import CandidateError
from pytest_llmbench.nightly.job import JobSettings, NightlyJob
from pytest_llmbench.nightly.store import StoreError, open_store


def _seconds(text: str) -> float | None:
    """``60m``, ``1.5h``, ``900`` → seconds; ``0`` or ``none`` → None (no bisect)."""
    if text.strip() in ("0", "none"):
        return None
    try:
        return parse_seconds(text, "duration")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _budget(text: str) -> str:
    _seconds(text)  # checked here, passed on as typed (--llmbench-compare-budget reads the same forms)
    return text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_llmbench nightly",
        description="Compare tonight's build with the pinned reference, store the night, run history over the "
        "stored nights, bisect a regression, and end with one headline. The bench selection goes after --.",
    )
    p.add_argument("--reference", required=True, metavar="BUILD", help="the build you run today (image ref or bin:DIR)")
    p.add_argument("--candidate", required=True, metavar="BUILD", help="tonight's build (image ref or bin:DIR)")
    p.add_argument(
        "--store", required=True, metavar="URL", help="where the nights live: a folder, git+REMOTE#BRANCH, s3://…"
    )
    p.add_argument(
        "--budget", type=_budget, default="40m", help="the comparison session's budget (--llmbench-compare-budget)"
    )
    p.add_argument(
        "--bisect-budget",
        type=_seconds,
        default=3600.0,
        metavar="DURATION",
        help="device time for the bisect a regression starts (default 60m; 0: never bisect)",
    )
    p.add_argument(
        "--step-budget",
        type=_seconds,
        default=None,
        metavar="DURATION",
        help="each bisect step's comparison budget per scenario (bisect's --compare-budget)",
    )
    p.add_argument(
        "--candidates-from",
        default=None,
        metavar="SOURCE",
        help="the builds a bisect may walk: file:PATH, docker:PATTERN (local image tags) or hook "
        "(pytest_llmbench_nightly_candidates); without it a bisect compares the two nights' builds only",
    )
    p.add_argument("--night", default=None, metavar="NAME", help="the night's name (default: the candidate's tag)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="work folder (default results/nightly-<time>)")
    return p


def _history(argv: list[str]) -> int:
    """``nightly history --store URL [history options]``: the history command over a store's nights."""
    from pytest_llmbench.cli import history as history_cli

    p = argparse.ArgumentParser(prog="python -m pytest_llmbench nightly history", add_help=True)
    p.add_argument("--store", required=True, metavar="URL")
    args, rest = p.parse_known_args(argv)
    try:
        store = open_store(args.store)
        with tempfile.TemporaryDirectory(prefix="llmbench-nights-") as tmp:
            folders = store.fetch_nights(Path(tmp))
            if not folders:
                print(f"nightly history: store {args.store} holds no nights", file=sys.stderr)
                return 2
            return int(history_cli.main([*map(str, folders), *rest]) or 0)
    except StoreError as e:
        print(f"nightly history: {e}", file=sys.stderr)
        return 2


def main(argv: list[str]) -> int:
    argv = list(argv)
    if argv[:1] == ["history"]:
        return _history(argv[1:])
    own, pytest_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    args = _parser().parse_args(own)
    redact.register_environ()
    redact.register(redact.secret_args(pytest_args))
    out = args.out or Path("results") / f"nightly-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    settings = JobSettings(
        reference=args.reference,
        candidate=args.candidate,
        pytest_args=pytest_args,
        out=out,
        budget=args.budget,
        bisect_budget_s=args.bisect_budget,
        step_budget_s=args.step_budget,
        candidates_from=args.candidates_from,
        night_label=args.night,
        command="python -m pytest_llmbench nightly " + shlex.join(argv),
    )
    if args.candidates_from == "hook":
        settings.hook = lambda: _hook_candidates(pytest_args, args.reference, args.candidate)
    try:
        out.mkdir(parents=True, exist_ok=True)
        job = NightlyJob(settings, open_store(args.store))
        with interrupts.handled():  # SIGTERM (a CI cancel) as Ctrl-C, and passed on to the night's session
            try:
                result = job.run()
            except KeyboardInterrupt as e:
                result = job.interrupted(e)
    except (StoreError, CandidateError) as e:
        print(f"nightly: {e}", file=sys.stderr)
        return 2
    for line in result.lines:
        print(f"  {line}")
    print(f"summary: {out / 'nightly.md'}")
    print(f"llmbench nightly: {result.headline} (exit status {result.exit_status})")
    return result.exit_status


def _hook_candidates(pytest_args: list[str], reference: str, candidate: str) -> list[str] | None:
    from pytest_llmbench.cli.bisect import hook_config

    config = hook_config(pytest_args)
    found = config.hook.pytest_llmbench_nightly_candidates(config=config, reference=reference, candidate=candidate)
    return None if found is None else [str(s) for s in found]
