"""Per-round noise of interleaved comparisons on real llama-servers, outside the plugin's verdicts (issue 20).

Two measurements, both plain fixed-round ABBA loops over the library's arm servers (compare.interleave:
ArmServers, block_window; one warm-up round dropped), so they calibrate what the gate is later asked to find:

- ``calibrate``: each candidate setting (extra server args) against the unchanged build: the per-round
  output tok/s log ratio, its mean as a ratio with a 95% t interval, and the per-round SD;
- ``blocks``: A/A (one build on both arms) at several prompts-per-block: per-round SD of tok/s and TPOT,
  seconds per round, and the device-seconds that 95% power at detect 3% / ignore 1% costs at that block
  size (Stein's N with a 12-round pilot, alpha 0.01, and one warm-up round, times the seconds per round). The block size with
  the fewest seconds is the default.

    python experiments/compare/compare_noise.py blocks --sizes 2 4 8 16 --rounds 12 --out data.jsonl
    python experiments/compare/compare_noise.py calibrate --args "-fa off" --args "-ctk q8_0 -ctv q8_0" --rounds 10
    # GPU: --config gpu-smol-nospec --config-file benches/configs/gpu/llamacpp-smollm2.yaml (llama-server
    # from $LLAMA_CPP_BIN_DIR); the scenario is test_llamacpp_gpu's chat-1u unless --output-len/--prompts
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from pytest_llmbench.compare.arms import ArmOptions, arms_from_options
from pytest_llmbench.compare.interleave import ArmServers, _run_block, block_window, round_order
from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.power import units_for
from pytest_llmbench.compare.stats import Spread
from pytest_llmbench.config import load_config_file
from pytest_llmbench.registry import Registry
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.scenario import Scenario, build_prompts

REGISTRY = Registry.builtin()
BLOCK_WARMUP = 0  # --block-warmup: warmup requests before every judged block
TPUT = Sizes("ratio", 0.01, 0.03)


def _servers(args: argparse.Namespace, candidate_args: str | None) -> ArmServers:
    cfg = {c.name: c for c in load_config_file(Path(args.config_file))}[args.config]
    if candidate_args:
        opts = ArmOptions.parse(candidate_args=candidate_args, reference_bin=args.reference_bin)
    else:
        from pytest_llmbench.engines.llamacpp import llamacpp_binary

        folder = args.reference_bin or str(llamacpp_binary().parent)
        opts = ArmOptions.parse(reference_bin=folder, candidate_bin=folder)
    pair = arms_from_options(cfg, opts, REGISTRY)
    workdir = Path(tempfile.mkdtemp(prefix="compare-noise-"))
    gpu_ids = tuple(str(i) for i in range(pair.candidate.config.gpus))

    def start(arm):
        return start_server(arm.config, workdir / arm.server_name, gpu_ids=gpu_ids, registry=REGISTRY)

    return ArmServers(pair, start(pair.candidate), start, keep_both=True)


def _rounds(servers: ArmServers, scenario: Scenario, size: int, rounds: int) -> dict:
    """``rounds`` judged ABBA rounds after one warm-up round: per-round log ratios and seconds."""
    prompts = build_prompts(servers.acquire("candidate"), scenario)[: scenario.num_prompts]
    quiet = replace(scenario, warmup=BLOCK_WARMUP, num_prompts=size)
    tput, tpot, secs = [], [], []
    for r in range(-1, rounds):
        ids = block_window(r, size, len(prompts))
        t0 = time.monotonic()
        got = {}
        for role in round_order(r):
            res = _run_block(
                servers.acquire(role),
                replace(scenario, num_prompts=size) if r < 0 else quiet,
                [prompts[i] for i in ids],
            )
            got[role] = res
        if r < 0:
            continue
        secs.append(time.monotonic() - t0)
        a, b = got["reference"].metrics, got["candidate"].metrics
        tput.append(math.log(b["output_throughput"] / a["output_throughput"]))
        ra = {x.index: x.tpot_s for x in got["reference"].records if x.ok and x.tpot_s}
        rb = {x.index: x.tpot_s for x in got["candidate"].records if x.ok and x.tpot_s}
        common = sorted(set(ra) & set(rb))
        tpot.append(float(np.mean([math.log(rb[i] / ra[i]) for i in common])) if common else math.nan)
    return {"tput": tput, "tpot": tpot, "seconds": secs}


def _summary(d: np.ndarray) -> tuple[float, float, float, float]:
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    half = float(stats.t.isf(0.025, d.size - 1)) * sd / math.sqrt(d.size)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), sd


def _scenario(args: argparse.Namespace) -> Scenario:
    return Scenario(
        "noise",
        dataset="sharegpt",
        output_len=args.output_len,
        num_prompts=args.prompts,
        concurrency=1,
        warmup=2,
        seed=1,
    )


def blocks(args: argparse.Namespace) -> None:
    servers = _servers(args, None)
    sc = _scenario(args)
    out = open(args.out, "a") if args.out else None
    print(
        "| prompts per block | rounds | s per round | tok/s SD per round | TPOT SD per round | SD² × s "
        "| rounds for 95% power at 3% (pilot 12) | device-s to decide |"
    )
    print("|---|---|---|---|---|---|---|---|")
    try:
        for size in args.sizes:
            got = _rounds(servers, sc, size, args.rounds)
            d = np.array(got["tput"])
            sd, tsd = float(d.std(ddof=1)), float(np.nanstd(got["tpot"], ddof=1))
            per = float(np.mean(got["seconds"]))
            n = units_for(Spread(sd, 11), sizes=TPUT, alpha=0.01, higher_is_better=True)
            print(
                f"| {size} | {d.size} | {per:.2f} | {100 * sd:.2f}% | {100 * tsd:.2f}% | {sd * sd * per:.2e} "
                f"| {n} | {(n + 1) * per:.0f} |",
                flush=True,
            )
            if out:
                out.write(
                    json.dumps(
                        {
                            "kind": "blocks",
                            "config": args.config,
                            "size": size,
                            "output_len": args.output_len,
                            "block_warmup": BLOCK_WARMUP,
                            **got,
                        }
                    )
                    + "\n"
                )
                out.flush()
    finally:
        servers.close()
        servers.candidate.stop()


def calibrate(args: argparse.Namespace) -> None:
    sc = _scenario(args)
    out = open(args.out, "a") if args.out else None
    print("| candidate args | rounds | tok/s ratio [95% CI] | per-round SD | TPOT ratio [95% CI] |")
    print("|---|---|---|---|---|")
    for extra in args.args:
        servers = _servers(args, extra)
        try:
            got = _rounds(servers, sc, args.block_prompts, args.rounds)
        finally:
            servers.close()
            servers.candidate.stop()
        r, lo, hi, sd = _summary(np.array(got["tput"]))
        tr, tlo, thi, _ = _summary(np.array([x for x in got["tpot"] if x == x]))
        print(
            f"| `{extra}` | {len(got['tput'])} | ×{r:.4f} [{lo:.4f}, {hi:.4f}] | {100 * sd:.2f}% "
            f"| ×{tr:.4f} [{tlo:.4f}, {thi:.4f}] |",
            flush=True,
        )
        if out:
            out.write(
                json.dumps(
                    {
                        "kind": "calibrate",
                        "config": args.config,
                        "args": extra,
                        "block_prompts": args.block_prompts,
                        **got,
                    }
                )
                + "\n"
            )
            out.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("blocks", "calibrate"):
        q = sub.add_parser(name)
        q.add_argument("--config", default="smol-nospec")
        q.add_argument("--config-file", default=str(ROOT / "benches" / "configs" / "cpu.yaml"))
        q.add_argument("--reference-bin", help="the reference llama-server folder (default: the installed one)")
        q.add_argument("--prompts", type=int, default=16, help="distinct prompts the blocks move through")
        q.add_argument("--output-len", type=int, default=64)
        q.add_argument("--rounds", type=int, default=12, help="judged rounds (after one warm-up round)")
        q.add_argument("--out", help="append the raw per-round values here (jsonl)")
        q.add_argument("--block-warmup", type=int, default=0, help="warmup requests before every judged block")
        if name == "blocks":
            q.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8])
        else:
            q.add_argument("--args", action="append", required=True, help="candidate server args (repeatable)")
            q.add_argument("--block-prompts", type=int, default=4)
    args = ap.parse_args()
    global BLOCK_WARMUP
    BLOCK_WARMUP = args.block_warmup
    blocks(args) if args.cmd == "blocks" else calibrate(args)


if __name__ == "__main__":
    main()
