"""Error rates of interleaved reference-vs-candidate comparisons on real llama-servers (issue 12).

Runs many small comparison sessions of SmolLM2-135M on llama.cpp with the same library calls the pytest
layer makes in ``bench.run`` (compare.arms.arms_from_options → compare.interleave.ArmServers and
run_rounds → compare.judging.judge_all with compare.judging.FamilyPlans): A/A sessions (one build on
both arms) and sessions with an injected change on the candidate (extra server args, or another
llama-server folder). Each session runs all ``--max-rounds`` rounds, and every look's comparisons are
kept, so the same data give

- the sequential result: the look at which ``FamilyPlans.stop`` would have ended the rounds (exactly
  what ``bench.run`` does) and the verdicts at that look;
- the fixed-N result: one test on all rounds at the full alpha (no looks);
- the stored-baseline gate on the candidate's merged number (the CPU suite's History(k=3) model with a
  history of three earlier runs), for contrast.

Usage (heavy: each session holds /tmp/llmbench-heavy.lock while it runs): ``compare_sessions.sh`` drives
it for the CPU and the GPU (calibrate, A/A, injected); by hand::

    python benches/perf/compare_error_rates.py calibrate --args "-fa off" --args "--poll 0"
    python benches/perf/compare_error_rates.py run --label cpu-aa --sessions 20 --prompts 3 --output-len 48 \
        --max-rounds 6 --out benches/perf/data/compare_cpu.jsonl
    python benches/perf/compare_error_rates.py run --label cpu-injected --candidate-args "-fa off" ...
    python benches/perf/compare_error_rates.py report benches/perf/data/compare_cpu.jsonl > benches/perf/compare_error_rates.out.md

Servers stay up across the sessions of one ``run`` (caches flushed before every block); a session is
one ``bench.run`` of the scenario below.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from pytest_llmbench.compare.arms import ArmOptions, arms_from_options  # noqa: E402
from pytest_llmbench.compare.interleave import ArmServers, run_rounds  # noqa: E402
from pytest_llmbench.compare.judging import FamilyPlans, compare_metric, judge_all  # noqa: E402
from pytest_llmbench.config import load_config_file  # noqa: E402
from pytest_llmbench.registry import Registry  # noqa: E402
from pytest_llmbench.server import start_server  # noqa: E402
from pytest_llmbench.server_facts import collect_facts  # noqa: E402
from pytest_llmbench.workload.scenario import Scenario  # noqa: E402

LOCK = "/tmp/llmbench-heavy.lock"
REGISTRY = Registry.builtin()
SCENARIO = Scenario("chat-small", dataset="sharegpt", output_len=32, num_prompts=3, concurrency=1, warmup=1, seed=1)
DECIDE = ("output_throughput", "median_ttft_ms", "median_tpot_ms", "accept_length")
ALPHA = 0.01  # per comparison, over all looks (the target for one comparison)


NO_LOCK = False  # --no-lock: the caller holds the heavy lock already (flock around several runs)


@contextmanager
def heavy_lock():
    if NO_LOCK:
        yield
        return
    with open(LOCK, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class RecordingPlan(FamilyPlans):
    """Runs every round, noting at each look whether ``FamilyPlans.stop`` would have ended the rounds."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.looks: list[dict] = []

    def stop(self, look, comparisons):
        would = FamilyPlans.stop(self, look, comparisons)
        self.looks.append({"look": look, "stop": would, "comparisons": [c.as_record() for c in comparisons]})
        return look >= self.max_looks


def _pair(config: str, args: argparse.Namespace):
    cfg = {c.name: c for c in load_config_file(Path(args.config_file))}[config]
    opts = ArmOptions.parse(reference_bin=args.reference_bin, candidate_bin=args.candidate_bin,
                            reference_args=args.reference_args, candidate_args=args.candidate_args)
    if not opts.active:  # A/A: the installed build on both sides
        from pytest_llmbench.engines.llamacpp import llamacpp_binary

        folder = str(llamacpp_binary().parent)
        opts = ArmOptions.parse(reference_bin=folder, candidate_bin=folder)
    return arms_from_options(cfg, opts, REGISTRY)


def _servers(pair, workdir: Path) -> ArmServers:
    gpu_ids = tuple(str(i) for i in range(pair.candidate.config.gpus))  # both arms on the same GPU(s)

    def start(arm):
        return start_server(arm.config, workdir / arm.server_name, gpu_ids=gpu_ids, registry=REGISTRY)

    with heavy_lock():
        candidate = start(pair.candidate)
    return ArmServers(pair, candidate, start, keep_both=True, facts=collect_facts)


def run(args: argparse.Namespace) -> None:
    pair = _pair(args.config, args)
    workdir = Path(tempfile.mkdtemp(prefix="compare-rates-"))
    servers = _servers(pair, workdir)
    out = open(args.out, "a")
    lock = None
    try:
        for s in range(args.sessions):
            if s % args.chunk == 0:  # the heavy lock is held for a chunk of sessions, then handed on
                if lock is not None:
                    lock.__exit__(None, None, None)
                lock = heavy_lock()
                lock.__enter__()
            plans = RecordingPlan({"timing": ALPHA, "quality": ALPHA}, max_looks=args.max_rounds, min_looks=args.min_rounds)
            t0 = time.monotonic()
            rounds, _ = run_rounds(servers, SCENARIO, plan=plans, judge=judge_all(args.decide or DECIDE, plans))
            fixed = [c.as_record() for m in DECIDE if (c := compare_metric(m, rounds, alpha=ALPHA)) is not None]
            per_round = {role: [b.result.metrics.get("output_throughput") for b in rounds.blocks if b.role == role]
                         for role in ("reference", "candidate")}
            merged = {role: {k: rounds.merged(role).metrics.get(k) for k in DECIDE} for role in ("reference", "candidate")}
            row = {"label": args.label, "config": args.config, "session": s, "reference": pair.reference.label,
                   "candidate": pair.candidate.label, "prompts_per_block": SCENARIO.num_prompts, "output_len": SCENARIO.output_len,
                   "max_rounds": args.max_rounds, "looks": plans.looks, "fixed_n": fixed, "per_round_tput": per_round,
                   "merged": merged, "wall_s": round(time.monotonic() - t0, 1),
                   "starts": [vars(x) for x in servers.starts]}
            servers.starts.clear()
            out.write(json.dumps(row) + "\n")
            out.flush()
            stop_at = next((lk["look"] for lk in plans.looks if lk["stop"]), args.max_rounds)
            verdicts = {c["metric"]: c["verdict"] for lk in plans.looks if lk["look"] == stop_at for c in lk["comparisons"]}
            print(f"[{args.label} {s + 1}/{args.sessions}] stop at round {stop_at}: {verdicts} ({row['wall_s']} s)",
                  flush=True)
    finally:
        servers.close()
        servers.candidate.stop()
        out.close()
        if lock is not None:
            lock.__exit__(None, None, None)


def calibrate(args: argparse.Namespace) -> None:
    """Candidate settings against the installed build: geometric-mean tok/s ratio over a few rounds."""
    for extra in args.args:
        args.candidate_args, args.reference_args, args.reference_bin, args.candidate_bin = extra, None, None, None
        pair = _pair(args.config, args)
        servers = _servers(pair, Path(tempfile.mkdtemp(prefix="compare-cal-")))
        plans = FamilyPlans({"timing": ALPHA, "quality": ALPHA}, max_looks=args.max_rounds, min_looks=args.max_rounds)
        try:
            with heavy_lock():
                rounds, comps = run_rounds(servers, SCENARIO, plan=plans, judge=judge_all(args.decide or DECIDE, plans))
        finally:
            servers.close()
            servers.candidate.stop()
        for c in comps:
            print(f"{extra!r:32} {c.metric:18} ratio {c.estimate:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] over {c.n}",
                  flush=True)


def main(argv: list[str]) -> int:
    global NO_LOCK, SCENARIO
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("run", "calibrate"):
        q = sub.add_parser(name)
        q.add_argument("--config", default="smol-nospec")
        q.add_argument("--config-file", default=str(ROOT / "benches" / "configs" / "cpu.yaml"))
        q.add_argument("--prompts", type=int, default=SCENARIO.num_prompts, help="prompts per block")
        q.add_argument("--output-len", type=int, default=SCENARIO.output_len, help="tokens per answer")
        q.add_argument("--decide", action="append", metavar="METRIC",
                       help="the metrics whose decision ends the rounds (repeatable; default: all of DECIDE)")
        q.add_argument("--max-rounds", type=int, default=6)
        q.add_argument("--min-rounds", type=int, default=3)
        q.add_argument("--reference-bin")
        q.add_argument("--candidate-bin")
        q.add_argument("--reference-args")
        q.add_argument("--candidate-args")
        if name == "run":
            q.add_argument("--label", required=True)
            q.add_argument("--sessions", type=int, default=20)
            q.add_argument("--chunk", type=int, default=10, help="sessions per hold of the heavy lock")
            q.add_argument("--out", required=True)
        else:
            q.add_argument("--args", action="append", required=True)
    r = sub.add_parser("report")
    r.add_argument("data")
    r.add_argument("--where", default="CPU", help="the machine, for the title")
    p.add_argument("--no-lock", action="store_true", help="the caller holds /tmp/llmbench-heavy.lock")
    args = p.parse_args(argv)
    NO_LOCK = args.no_lock
    if args.cmd != "report":
        SCENARIO = replace(SCENARIO, num_prompts=args.prompts, output_len=args.output_len)
    if args.cmd == "run":
        run(args)
    elif args.cmd == "calibrate":
        calibrate(args)
    else:
        from compare_error_rates_report import report  # noqa: E402  (benches/perf/, next to this file)

        sys.stdout.write(report(Path(args.data), args.where))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
