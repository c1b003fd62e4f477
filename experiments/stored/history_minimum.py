"""How many server starts must a timing History hold before it judges (issue 21)?

Measured data: the 13 unchanged runs of the GPU smoke suite on one H200 (3 recorded + 10 reruns, one
server start each, ``experiments/data/stored/gpu_reruns/``): 12 timing gates (tok/s and median TPOT × 3
scenarios × 2 configs), among them the draft config's bimodal prompt4k-1u and its ±13% chat-4u.

Resampling whole runs (a run's gates move together): for each history length m, draw m runs as the
accepted history and one other run as today's, judge every gate with the gate's own code
(``History(k=3)`` under the default timing budget: α = 0.02 over the 12 gates), and count

- false alarms: runs with any REGRESSED gate, today unchanged;
- power: runs where today's tok/s gates are ×0.85 and TPOT ×1/0.85 (an injected −15%), per gate and
  per run (any gate regressed).

    python experiments/stored/history_minimum.py --draws 2000 > experiments/stored/history_minimum.out.md
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from pytest_llmbench.gate.judge import judge
from pytest_llmbench.gate.noise import History
from pytest_llmbench.gate.types import BaselineEntry, Observation

DATA = Path(__file__).resolve().parents[1] / "data" / "stored" / "gpu_reruns"
RUNS = [f"record-{i}" for i in (1, 2, 3)] + [f"rerun-{i}" for i in range(1, 11)]
TIMING = ("output_throughput", "median_tpot_ms")
ALPHA = 0.02


def load() -> tuple[list[tuple[str, str, str]], dict[tuple[str, str, str], list[float | None]], dict]:
    values: dict[tuple[str, str, str], list[float | None]] = defaultdict(lambda: [None] * len(RUNS))
    direction = {}
    for i, run in enumerate(RUNS):
        for line in (DATA / f"{run}.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r.get("record") == "verdict" and r["metric"] in TIMING:
                key = (r["config"], r["test_key"].split("[")[-1].rstrip("]"), r["metric"])
                values[key][i] = r["observed"]
                direction[key] = r["direction"]
    return sorted(values), values, direction


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--k", type=float, default=3.0)
    args = ap.parse_args()
    gates, values, direction = load()
    threshold = ALPHA / len(gates)
    rng = np.random.default_rng(0)
    print(f"# History length against false alarms and power on {len(RUNS)} real H200 runs\n")
    print(
        f"{len(gates)} timing gates; History(k={args.k:g}); per-gate budget α/m = {ALPHA}/{len(gates)} = "
        f"{threshold:.4f}; {args.draws} resampled (history, today) pairs of runs per row.\n"
    )
    print("Between-start spread of each gate over the 13 runs (SD as % of the mean):\n")
    for g in gates:
        v = np.array([x for x in values[g] if x is not None])
        print(f"- {g[0]} {g[1]} {g[2]}: {100 * v.std(ddof=1) / v.mean():.1f}% (min {v.min():.4g}, max {v.max():.4g})")
    print(
        "\n| starts in history | runs with a false REGRESSED | runs with the −15% caught | gates: −15% caught "
        "(median over gates) | gates caught in ≥ 80% of draws |"
    )
    print("|---:|---:|---:|---:|---:|")
    for m in (3, 4, 5, 6, 8, 10, 12):
        false_runs = caught_runs = 0
        per_gate = defaultdict(list)
        for _ in range(args.draws):
            pick = rng.permutation(len(RUNS))
            hist_idx, today = pick[:m], pick[m]
            false_any = caught_any = False
            for g in gates:
                hist = tuple(values[g][i] for i in hist_idx if values[g][i] is not None)
                now = values[g][today]
                if now is None or len(hist) < 2:
                    continue
                model = History(k=args.k, min_runs=min(m, len(hist)))
                entry = BaselineEntry(value=hist[-1], direction=direction[g], noise=model.to_dict(), history=hist)
                worse = 0.85 if direction[g] == "higher" else 1 / 0.85
                v0 = judge(entry, Observation.of(now), model, direction[g], threshold=threshold)
                v1 = judge(entry, Observation.of(now * worse), model, direction[g], threshold=threshold)
                false_any |= v0.status == "REGRESSED"
                hit = v1.status == "REGRESSED"
                caught_any |= hit
                per_gate[g].append(hit)
            false_runs += false_any
            caught_runs += caught_any
        rates = sorted(float(np.mean(h)) for h in per_gate.values())
        print(
            f"| {m} | {100 * false_runs / args.draws:.1f}% | {100 * caught_runs / args.draws:.0f}% | "
            f"{100 * rates[len(rates) // 2]:.0f}% | {sum(r >= 0.8 for r in rates)} of {len(rates)} |"
        )


if __name__ == "__main__":
    main()
