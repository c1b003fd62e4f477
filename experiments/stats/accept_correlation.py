"""Run-to-run correlation of per-prompt accept length on real llama.cpp reruns: what pairing buys.

Not a test: a script whose numbers go in the notes and in ``paired_power.py``.

    flock /tmp/llmbench-heavy.lock python experiments/stats/accept_correlation.py --reruns 5 --prompts 32

For each drafting config of ``benches/configs/cpu.yaml`` (n-gram, Q2_K draft model) the same prompts
(MT-Bench and HumanEval first turns, sampled with the protocol's seed) are run ``--reruns`` times under
the CPU card protocol (temperature 1, top-p 0.95, top-k 20, 64 tokens, sampling seed 1), each rerun on a
fresh llama-server start. Per pair of reruns it reports the Pearson correlation of accept length across
prompts and the SD of the per-prompt differences — the noise a paired gate sees — beside the SD between
prompts, the noise an unpaired gate sees. With ``--vary-seed`` every rerun uses another sampling seed
too: the correlation that is left when sampling noise is not shared (the prompt's own effect).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))

from pytest_llmbench.config import load_config_file
from pytest_llmbench.datasets import prompt_sets as datasets
from pytest_llmbench.evals import bfcl
from pytest_llmbench.evals.accept_length import run_accept_length
from pytest_llmbench.evals.protocols import get_protocol
from pytest_llmbench.server import start_server

sys.path.insert(0, str(HERE.parent / "_lib"))
from machine_state import loadavg, others

PROTOCOL = "dflash2-card-cpu"
DEFAULT_OUT = HERE / "accept_correlation.out.md"
DEFAULT_RAW = HERE.parent / "data" / "stats" / "accept_correlation.json"


def rerun(cfg, prompts, seed: int, workdir: Path) -> dict[str, float]:
    """One fresh server start, every prompt once; {case id: accept length}."""
    server = start_server(cfg, workdir)
    try:
        out: dict[str, float] = {}
        for set_prompts in prompts.values():
            result = run_accept_length(server, set_prompts, PROTOCOL, seed=seed)
            if result.failed:
                raise RuntimeError(f"{cfg.name}: {result.failed} request(s) failed: {result.errors[:3]}")
            out.update({f"{k.rsplit('@', 1)[0]}": v for k, v in result.by_case().items()})
        return out
    finally:
        server.stop()


def bfcl_rerun(cfg, workdir: Path) -> dict[str, float]:
    """One fresh server start, the CPU BFCL subset as the bench runs it; {case id: 1 pass / 0 fail}."""
    server = start_server(cfg, workdir)
    try:
        return bfcl.run_bfcl(server, bfcl.subset_cases(bfcl.SUBSET_CPU), "tools", "bfcl-cpu").by_case()
    finally:
        server.stop()


def agreement(runs: list[dict[str, float]]) -> tuple[float, int, int]:
    """(mean share of cases with the same verdict over pairs of reruns, cases that ever flipped, cases)."""
    common = sorted(set.intersection(*(set(r) for r in runs)))
    pairs = list(itertools.combinations(runs, 2))
    share = float(np.mean([np.mean([a[c] == b[c] for c in common]) for a, b in pairs]))
    flipped = sum(len({r[c] for r in runs}) > 1 for c in common)
    return share, flipped, len(common)


def pair_stats(runs: list[dict[str, float]]) -> dict[str, float]:
    """Correlation and SDs over every pair of reruns, on the prompts both reran with a value."""
    rhos, sd_diff, sd_between = [], [], []
    for a, b in itertools.combinations(runs, 2):
        common = sorted(a.keys() & b.keys())
        x, y = np.array([a[c] for c in common]), np.array([b[c] for c in common])
        constant = np.ptp(x) == 0 or np.ptp(y) == 0  # e.g. n-gram drafting that never accepts: all 1.0
        rhos.append(float("nan") if constant else stats.pearsonr(x, y).statistic)
        sd_diff.append(float(np.std(x - y, ddof=1)))
        sd_between.append(float(np.sqrt((np.var(x, ddof=1) + np.var(y, ddof=1)) / 2)))
    identical = sum(a == b for a, b in itertools.combinations(runs, 2))
    finite = [r for r in rhos if np.isfinite(r)] or [float("nan")]
    return {
        "pairs": len(rhos),
        "rho_mean": float(np.mean(finite)),
        "rho_min": float(np.min(finite)),
        "rho_max": float(np.max(finite)),
        "sd_between": float(np.mean(sd_between)),
        "sd_diff": float(np.mean(sd_diff)),
        "identical_pairs": identical,
        "mean": float(np.mean([np.mean(list(r.values())) for r in runs])),
        "run_means_sd": float(np.std([np.mean(list(r.values())) for r in runs], ddof=1)),
        "prompts": int(np.mean([len(r) for r in runs])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="smol-ngram,smol-draft")
    ap.add_argument("--sets", default="mt-bench,humaneval")
    ap.add_argument("--prompts", type=int, default=32, help="prompts per set")
    ap.add_argument("--reruns", type=int, default=5)
    ap.add_argument("--vary-seed", action="store_true", help="also rerun with a different sampling seed each time")
    ap.add_argument("--bfcl-reruns", type=int, default=0, help="also rerun the CPU BFCL subset on smol-nospec")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--raw", type=Path, default=DEFAULT_RAW)
    args = ap.parse_args()

    cfgs = {c.name: c for c in load_config_file(REPO / "benches/configs/cpu.yaml")}
    proto = get_protocol(PROTOCOL)
    prompts = {s: datasets.prompt_set(s, args.prompts, proto.seed) for s in args.sets.split(",")}
    conditions = [("same seed", lambda r: 1)] + ([("seed varies", lambda r: 100 + r)] if args.vary_seed else [])
    raw: dict[str, dict[str, list[dict[str, float]]]] = {}
    t0 = time.monotonic()
    load_before = loadavg()
    with tempfile.TemporaryDirectory(prefix="llmbench-corr-") as tmp:
        for name in args.configs.split(","):
            for label, seed_of in conditions:
                runs = []
                for r in range(args.reruns):
                    runs.append(rerun(cfgs[name], prompts, seed_of(r), Path(tmp) / f"{name}-{label}-{r}"))
                    print(
                        f"{name} [{label}] rerun {r + 1}/{args.reruns}: mean {np.mean(list(runs[-1].values())):.3f} "
                        f"over {len(runs[-1])} prompts ({time.monotonic() - t0:.0f} s)",
                        flush=True,
                    )
                raw.setdefault(name, {})[label] = runs
        bfcl_runs = []
        for r in range(args.bfcl_reruns):
            bfcl_runs.append(bfcl_rerun(cfgs["smol-nospec"], Path(tmp) / f"bfcl-{r}"))
            print(
                f"smol-nospec BFCL rerun {r + 1}/{args.bfcl_reruns}: {sum(bfcl_runs[-1].values()):.0f} of "
                f"{len(bfcl_runs[-1])} passed ({time.monotonic() - t0:.0f} s)",
                flush=True,
            )
        if bfcl_runs:
            raw["smol-nospec"] = {"bfcl": bfcl_runs}
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    args.raw.write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")

    lines = [
        "# Run-to-run per-prompt correlation of accept length (real llama.cpp reruns)",
        "",
        f"`python experiments/stats/accept_correlation.py --reruns {args.reruns} --prompts {args.prompts}"
        f"{' --vary-seed' if args.vary_seed else ''}` — configs {args.configs} of benches/configs/cpu.yaml "
        f"(SmolLM2-135M Q4_1, 2 threads), sets {args.sets} ({args.prompts} first turns each, protocol "
        f"`{PROTOCOL}`: temperature 1, top-p 0.95, top-k 20, 64 tokens), every rerun a fresh server start. "
        f"{time.monotonic() - t0:.0f} s; load average before {load_before}, after {loadavg()}; busy: {others()}.",
        "",
        "ρ: Pearson correlation across prompts between two reruns (mean, min–max over all pairs). "
        "SD between: per-prompt SD within a rerun (the unpaired gate's noise per prompt). "
        "SD diff: SD of per-prompt differences between two reruns (the paired gate's noise per prompt); "
        "unpaired, a difference of means has SD √2·SD between/√n, paired SD diff/√n.",
        "",
        "| config | sampling seed | prompts | mean accept | SD of rerun means | ρ mean | ρ min–max | SD between | SD diff "
        "| identical reruns (pairs) | SE ratio paired/unpaired |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, by_label in raw.items():
        for label, runs in by_label.items():
            if label == "bfcl":
                continue
            s = pair_stats(runs)
            ratio = s["sd_diff"] / (np.sqrt(2) * s["sd_between"]) if s["sd_between"] > 0 else float("nan")
            lines.append(
                f"| {name} | {label} | {s['prompts']} | {s['mean']:.3f} | {s['run_means_sd']:.4f} | "
                f"{s['rho_mean']:.3f} | {s['rho_min']:.3f}–{s['rho_max']:.3f} | {s['sd_between']:.3f} | "
                f"{s['sd_diff']:.3f} | {s['identical_pairs']}/{s['pairs']} | {ratio:.2f} |"
            )
    if "smol-nospec" in raw:
        runs = raw["smol-nospec"]["bfcl"]
        share, flipped, n = agreement(runs)
        lines += [
            "",
            f"BFCL CPU subset on smol-nospec (`bfcl-cpu`: temperature 0.001, seed 1), {len(runs)} reruns: "
            f"passed {', '.join(str(int(sum(r.values()))) for r in runs)} of {n}; per-case agreement "
            f"between two reruns {share:.1%}; {flipped} case(s) flipped in any rerun.",
        ]
    lines.append("")
    lines.append(f"Raw per-prompt values: `{os.path.relpath(args.raw.resolve(), args.out.resolve().parent)}`.")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
