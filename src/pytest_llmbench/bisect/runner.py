"""Each bisect step is a real pytest session of the user's bench selection, as they would type it.

The step's two builds become the comparison's arms (``--llmbench-reference-bin`` / ``--llmbench-candidate-bin``,
or ``--llmbench-reference-image`` / ``--llmbench-candidate-image`` for images), the session writes its own results
folder (``<out>/steps/NN-…``) and its comparison records decide the step; nothing is judged here twice:

- any comparison ``regressed`` (or regressed at the session's Holm step) → ``different``;
- every comparison ``equivalent`` (or ``improved``: faster is not the regression sought) → ``same``;
- otherwise (``inconclusive``) → ``unknown``; a retry doubles the scenario budget and the rounds;
- no comparison, and one arm's server never started (its ``server`` record is missing) → ``skip`` that build.

A session that fails for a reason no build explains (a usage error, no test selected, a selection that
compares nothing) stops the bisect with that session's own message.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmbench import interrupts
from pytest_llmbench.bisect.builds import BuildCache, BuildError, Materialized
from pytest_llmbench.bisect.search import Step, StepResult, reading_of
from pytest_llmbench.compare.options import DEFAULT_BUDGET_S, DEFAULT_MAX_ROUNDS
from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.jsonl import iter_jsonl
from pytest_llmbench.records.read import of_kind, read_line

#: Options each step sets itself; given in the pytest arguments they would fight the bisect.
RESERVED = (
    "--results-dir",
    "--llmbench-reference-bin",
    "--llmbench-candidate-bin",
    "--llmbench-reference-image",
    "--llmbench-candidate-image",
    "--llmbench-image",
    "--llmbench-reference-args",
    "--llmbench-candidate-args",
    "--llmbench-compare-budget",
    "--llmbench-max-rounds",
)
#: pytest exit codes that no build explains: interrupted, internal error, usage error, nothing collected.
SESSION_FAILURES = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}
TIMED_OUT = -1  # run_session's code for a session stopped at its time limit


class RunnerError(LlmbenchError):
    """A step's session failed for a reason that is not a build's; the message holds the session's words."""


def check_pytest_args(args: Sequence[str]) -> None:
    for a in args:
        name = a.split("=", 1)[0]
        if name in RESERVED:
            hint = {
                "--llmbench-compare-budget": " (use bisect's --compare-budget)",
                "--llmbench-max-rounds": " (use bisect's --max-rounds)",
            }.get(name, "")
            raise ValueError(f"{name}: the bisect sets it for every step; leave it out of the pytest arguments{hint}")


def arm_args(reference: Materialized, candidate: Materialized) -> list[str]:
    """The comparison options that put these two builds on the arms."""
    if reference.kind != candidate.kind:
        raise RunnerError(
            f"builds {reference.label!r} ({reference.kind}) and {candidate.label!r} ({candidate.kind}) cannot be "
            f"compared: every build of one bisect is a binary folder, or every one is an image"
        )
    if reference.bin_dir is not None and candidate.bin_dir is not None:
        return ["--llmbench-reference-bin", str(reference.bin_dir), "--llmbench-candidate-bin", str(candidate.bin_dir)]
    assert reference.image is not None and candidate.image is not None
    # the materializer pulled both: a step never pulls again, and runs exactly the digests it recorded
    return [
        "--llmbench-reference-image",
        reference.image,
        "--llmbench-candidate-image",
        candidate.image,
        "--no-pull",
    ]


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:40] or "build"


#: a step's session folder as :meth:`StepRunner.folder` names it, ``NN-kind-ref-vs-cand`` (``-moreA`` on a
#: retry): the report finds the step a lost machine left without an outcome by it
STEP_FOLDER = re.compile(r"(?P<step>\d+)-(?P<kind>[a-z]+)-(?P<ref>.+)-vs-(?P<cand>.+?)(?:-more(?P<attempt>\d+))?")


@dataclass(frozen=True)
class SessionSettings:
    """How every step's session is run."""

    pytest_args: tuple[str, ...]
    out: Path
    #: per scenario, first attempt (``--llmbench-compare-budget``); a retry doubles it
    compare_budget_s: float = DEFAULT_BUDGET_S
    #: rounds per scenario, first attempt (``--llmbench-max-rounds``); a retry doubles it
    max_rounds: int = DEFAULT_MAX_ROUNDS
    #: the metric whose ratio the table and the plot show (the step is decided by every comparison)
    metric: str = "output_throughput"
    python: str = sys.executable
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    timeout_s: float | None = None

    def escalation(self, attempt: int, scale: float = 1.0) -> list[str]:
        """The session's budget and rounds for ``Step.units`` = ``scale`` × 2^attempt (a retry doubles them; a
        step sized for the ends' change multiplies them). The session stops at the rounds its pilot plans for
        ``detect``: more units are spent only where the budget or ``max_rounds`` cut that plan short."""
        factor = scale * 2**attempt
        return [
            "--llmbench-compare-budget",
            f"{self.compare_budget_s * factor:g}",
            "--llmbench-max-rounds",
            str(max(1, round(self.max_rounds * factor))),
        ]


def records(folder: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in sorted(folder.glob("results*.jsonl")):
        out.extend(read_line(row, f"{f}:{n}") for n, row in iter_jsonl(f, RunnerError))
    return out


def session_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A step session's environment: the caller's, the bisect's settings, and 300 columns last. pytest cuts its
    short summary (the reason a build is skipped) at the terminal's width, and a COLUMNS the caller has (xdist
    sets 80 in its workers; CI shells export theirs) cut "server exited (code 1)" to "server exited (..."."""
    return {**os.environ, **(extra or {}), "COLUMNS": "300", "PYTHONUNBUFFERED": "1"}


def failure_lines(log_text: str, limit: int = 3) -> list[str]:
    """pytest's short summary (``-rfE``): the lines that say why a test failed or errored."""
    found = [ln.strip() for ln in log_text.splitlines() if ln.startswith(("ERROR ", "FAILED "))]
    return found[:limit]


def shown_comparison(comps: Sequence[Mapping[str, Any]], metric: str) -> Mapping[str, Any] | None:
    """The comparison a table row shows: of ``metric`` if measured (the most regressed one), else the first."""
    if not comps:
        return None
    pool = [c for c in comps if c.get("metric") == metric] or list(comps)
    regressed = [c for c in pool if c.get("verdict") == "regressed"]
    if regressed:
        pool = regressed

    def worse(c: Mapping[str, Any]) -> float:
        r = c.get("ratio")
        if not isinstance(r, (int, float)) or r <= 0:
            return 0.0
        return -r if c.get("higher_is_better", True) else r

    return max(pool, key=worse) if regressed else pool[0]


def decide(
    recs: Sequence[Mapping[str, Any]], returncode: int, log_text: str, step: Step, metric: str
) -> tuple[str, int | None, str, dict[str, Any]]:
    """(outcome, skipped build, reason, details) of one finished session."""
    comps = of_kind(recs, "comparison")
    suite = {
        (x.get("nodeid"), x.get("metric"))
        for b in of_kind(recs, "comparison_budget")
        for x in b.get("suite_regressed") or []
    }
    details: dict[str, Any] = {
        "comparisons": [
            {
                k: c.get(k)
                for k in ("test_key", "scenario", "metric", "verdict", "ratio", "difference", "ci_low", "ci_high")
            }
            | {"suite_regressed": (c.get("nodeid"), c.get("metric")) in suite}
            for c in comps
        ]
    }
    shown = shown_comparison(comps, metric)
    if shown is not None:
        details["shown"] = {
            k: shown.get(k)
            for k in (
                "metric",
                "test_key",
                "verdict",
                "ratio",
                "difference",
                "ci_low",
                "ci_high",
                "se",
                "higher_is_better",
            )
        }
    failures = failure_lines(log_text)
    if returncode in SESSION_FAILURES:
        tail = " | ".join(log_text.strip().splitlines()[-5:])
        raise RunnerError(f"step {step.number}: the session ended with a {SESSION_FAILURES[returncode]}: {tail}")
    if comps:
        verdicts = [c.get("verdict") for c in comps]
        regressed = [c for c in comps if c.get("verdict") == "regressed" or (c.get("nodeid"), c.get("metric")) in suite]
        if regressed:
            return "different", None, "", details
        if all(v in ("equivalent", "improved") for v in verdicts):
            return "same", None, "", details
        undecided = sorted({str(c.get("metric")) for c in comps if c.get("verdict") == "inconclusive"})
        return "unknown", None, f"inconclusive: {', '.join(undecided)}", details
    if returncode == TIMED_OUT:
        return "unknown", None, "the session ran past its time limit (--step-timeout)", details
    started = {str(r.get("role") or "candidate") for r in of_kind(recs, "server")}
    why = "; ".join(failures) or f"pytest exited {returncode}"
    if "candidate" not in started:
        return "skip", step.candidate, f"did not start: {why}", details
    if "reference" not in started:
        return "skip", step.reference, f"did not start: {why}", details
    if returncode == 0:
        raise RunnerError(
            f"step {step.number}: the session passed but wrote no comparison record: does the selection run a "
            f"bench that checks a serving metric (bench.check('output_throughput', …))?"
        )
    return "skip", step.candidate, f"no comparison (the session failed): {why}", details


def run_session(
    cmd: Sequence[str], sink: Any, *, cwd: Path | None, env: Mapping[str, str], timeout_s: float | None
) -> int:
    """Run one session to its end. Past ``timeout_s`` it gets SIGINT first, as Ctrl-C would, so pytest's own
    cleanup stops every server it started, and SIGKILL only if it is still there 60 s later."""
    proc = subprocess.Popen(list(cmd), stdout=sink, stderr=subprocess.STDOUT, cwd=cwd, env=dict(env))
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        sink.write(f"\n[bisect] the session ran past {timeout_s:g} s: interrupted\n")
        sink.flush()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return TIMED_OUT
    except BaseException as e:  # Ctrl-C of the bisect reached the session too (same process group); SIGTERM is
        interrupts.forward(proc, e)  # passed on: either way the session stops its servers before the bisect ends
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


class StepRunner:
    """``compare(step)`` for :class:`~pytest_llmbench.bisect.search.Search`: materialize, run, decide."""

    def __init__(self, cache: BuildCache, settings: SessionSettings, *, say: Callable[[str], None] | None = None):
        self.cache = cache
        self.settings = settings
        self.say = say or (lambda line: None)

    def _materialize(self, index: int) -> tuple[Materialized | None, float, str]:
        fresh = self.cache.known(index) is None
        if fresh:
            self.say(f"  materializing {self.cache.builds[index].label} …")
        try:
            m = self.cache.get(index)
        except BuildError as e:
            return None, 0.0, str(e)
        return m, (m.seconds if fresh else 0.0), ""

    def folder(self, step: Step) -> Path:
        ref, cand = self.cache.builds[step.reference].label, self.cache.builds[step.candidate].label
        retry = f"-more{step.attempt}" if step.attempt else ""
        return self.settings.out / "steps" / f"{step.number:02d}-{step.kind}-{slug(ref)}-vs-{slug(cand)}{retry}"

    def command(self, step: Step, reference: Materialized, candidate: Materialized, folder: Path) -> list[str]:
        return [
            self.settings.python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rfE",
            *self.settings.pytest_args,
            *arm_args(reference, candidate),
            *self.settings.escalation(step.attempt, step.scale),
            "--results-dir",
            str(folder),
        ]

    def __call__(self, step: Step) -> StepResult:
        t0 = time.monotonic()
        built: dict[str, Materialized] = {}
        build_s = 0.0
        for role, index in (("reference", step.reference), ("candidate", step.candidate)):
            m, seconds, error = self._materialize(index)
            build_s += seconds
            if m is None:
                return StepResult(
                    "skip",
                    time.monotonic() - t0,
                    skipped=index,
                    reason=f"did not materialize: {error}",
                    details={"build_s": build_s, "stage": "materialize", "role": role},
                )
            built[role] = m
        folder = self.folder(step)
        folder.mkdir(parents=True, exist_ok=True)
        cmd = self.command(step, built["reference"], built["candidate"], folder)
        log = folder / "session.log"
        env = session_env(self.settings.env)
        t1 = time.monotonic()
        with open(log, "w") as sink:
            sink.write("$ " + " ".join(cmd) + "\n")
            sink.flush()
            returncode = run_session(cmd, sink, cwd=self.settings.cwd, env=env, timeout_s=self.settings.timeout_s)
        session_s = time.monotonic() - t1
        text = log.read_text(errors="replace")
        outcome, skipped, reason, details = decide(records(folder), returncode, text, step, self.settings.metric)
        details |= {
            "results_dir": str(folder),
            "session_s": session_s,
            "build_s": build_s,
            "returncode": returncode,
        }
        return StepResult(
            outcome,
            time.monotonic() - t0,
            build_seconds=build_s,
            skipped=skipped,
            reason=reason,
            details=details,
            reading=reading_of(details.get("shown")),
        )


# --- what a bisect will cost, said before it starts -----------------------------------------------------


@dataclass(frozen=True)
class StepCost:
    seconds: float
    source: str  # where the figure comes from, said with it


def recorded_step_cost(folder: Path) -> StepCost | None:
    """A step's device seconds from an earlier run: a bisect folder (its steps' median) or a comparison
    session's results folder (planned rounds × seconds per round, plus every arm start)."""
    recs = records(folder)
    bisects = of_kind(recs, "bisect")
    # the steps of its last result, or of one cut short (a lease that ended mid-step has only its step lines)
    steps: Sequence[Mapping[str, Any]] = (bisects[-1].get("steps") or []) if bisects else of_kind(recs, "bisect_step")
    if steps:
        # a step's session, without the builds it waited for (cached for the next bisect over them)
        secs = [
            s["gpu_s"] - float(s.get("build_s") or 0.0) for s in steps if s.get("outcome") != "skip" and s.get("gpu_s")
        ]
        if secs:
            return StepCost(statistics.median(secs), f"median of {len(secs)} steps in {folder}")
    plans = of_kind(recs, "comparison_plan")
    if not plans:
        return None
    rounds_s = sum(float(p.get("rounds") or 0) * float(p.get("seconds_per_round") or 0) for p in plans)
    starts = [float(s["startup_s"]) for s in of_kind(recs, "arm_start") if s.get("startup_s")]
    return StepCost(
        rounds_s + sum(starts),
        f"{folder}: {len(plans)} scenario(s), {rounds_s:.0f} s of rounds + {len(starts)} server starts "
        f"({statistics.mean(starts) if starts else 0:.1f} s each)",
    )


def cost_text(n: int, comparisons: int, step: StepCost | None, budget_s: float | None, to_build: Sequence[str]) -> str:
    """The bisect's price, before it starts."""
    head = (
        f"bisect over {n} builds ({n - 2} between good and bad): {comparisons} comparisons if none is skipped or "
        f"undecided (the ends, ≤ {comparisons - 2} halvings, the confirmation); each skipped build costs one "
        f"more, each undecided one a retry at twice the rounds"
    )
    if step is not None:
        head += f"; a step ≈ {step.seconds:.0f} s ({step.source}) → ≈ {comparisons * step.seconds / 60:.1f} GPU-minutes"
    else:
        head += "; no recorded step cost (--cost-from DIR): the ends step measures it"
    if budget_s is not None:
        head += f"; budget {budget_s:g} GPU-s"
        if step is not None and step.seconds > 0:
            head += f" (~{budget_s / step.seconds:.0f} steps)"
    if to_build:
        head += f"; {len(to_build)} build(s) not cached yet, made when first needed: {', '.join(to_build)}"
    return head


__all__ = [
    "RESERVED",
    "RunnerError",
    "SessionSettings",
    "StepCost",
    "StepRunner",
    "arm_args",
    "check_pytest_args",
    "cost_text",
    "decide",
    "recorded_step_cost",
]
