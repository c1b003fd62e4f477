"""What the /metrics scrape costs the TPOT it explains (issue 59): an A/B of scrape intervals on one server.

One real llama-server (cpu.yaml's smol-nospec: SmolLM2, -t 2, -np 4) serves the same decode scenario
(random 32-token prompts, 64 output tokens, 4 prompts at 1 user) through ``run_scenario`` with the scrape
off (interval 0) and at each interval asked for, the order rotated every round (a Latin square, so a drift
falls on every arm alike). Per round each arm gives its median TPOT; the cost of an interval is the
geometric mean over rounds of (with scrape / off), with a 95% t interval on the log ratios (scipy).
The 2-core host is shared with other engineers' work: their load is noise here, in both arms alike.

    flock /tmp/llmbench-heavy.lock nice -n 5 python experiments/telemetry/scrape_cost.py --rounds 24 \
        > experiments/telemetry/scrape_cost.out.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats

from pytest_llmbench.config import load_config_file
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.scenario import Scenario, build_prompts, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SC = Scenario("decode", dataset="random", input_len=32, output_len=64, num_prompts=4, concurrency=1, warmup=0, seed=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=24)
    ap.add_argument("--intervals", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--config", default="smol-nospec")
    args = ap.parse_args()
    cfg = {c.name: c for c in load_config_file(ROOT / "benches/configs/cpu.yaml")}[args.config]
    arms = [0.0, *args.intervals]
    tpot: dict[float, list[float]] = {a: [] for a in arms}
    samples: dict[float, list[int]] = {a: [] for a in arms}
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="llmbench-scrape-cost-") as tmp:
        server = start_server(cfg, Path(tmp) / "server")
        try:
            prompts = build_prompts(server, SC)
            run_scenario(server, replace(SC, warmup=2, scrape_interval_s=0), prompts=prompts)  # warm the server
            for r in range(args.rounds):
                order = arms[r % len(arms) :] + arms[: r % len(arms)]
                if (r // len(arms)) % 2:
                    order.reverse()
                for a in order:
                    res = run_scenario(server, replace(SC, scrape_interval_s=a), prompts=prompts)
                    if res.metrics.get("failed"):
                        sys.exit(f"round {r} interval {a}: {res.errors}")
                    tpot[a].append(float(res.metrics["median_tpot_ms"]))
                    samples[a].append(len(res.telemetry.samples) if res.telemetry else 0)
        finally:
            server.stop()
    minutes = (time.monotonic() - t_start) / 60
    print("# The scrape's cost on TPOT: an A/B of /metrics scrape intervals (issue 59)")
    print()
    print(
        f"Command: `flock /tmp/llmbench-heavy.lock nice -n 5 python experiments/telemetry/scrape_cost.py "
        f"--rounds {args.rounds} --intervals {' '.join(map(str, args.intervals))}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {minutes:.1f} min; 2-core CPU shared with other "
        f"engineers' work: their load is noise in every arm alike)"
    )
    print()
    print(f"Config {args.config} (cpu.yaml), scenario: {SC.input_len}-token prompts, {SC.output_len} output tokens, ")
    print(f"{SC.num_prompts} prompts at 1 user per run; {args.rounds} rounds, arm order rotated each round.")
    print()
    print(
        "| scrape interval | runs | median TPOT ms (median of runs) | samples per run | with / off (geo. mean) | 95% interval |"
    )
    print("|---|---|---|---|---|---|")
    off = np.log(tpot[0.0])
    for a in arms:
        cells = [
            "off" if a == 0 else f"{a:g} s",
            str(len(tpot[a])),
            f"{statistics.median(tpot[a]):.3f}",
            f"{statistics.median(samples[a]):.0f}",
        ]
        if a == 0:
            cells += ["1", "-"]
        else:
            d = np.log(tpot[a]) - off
            ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
            cells += [f"×{np.exp(d.mean()):.4f}", f"[×{np.exp(ci.low):.4f}, ×{np.exp(ci.high):.4f}]"]
        print("| " + " | ".join(cells) + " |")
    print()
    print("Per-round median TPOT (ms), by arm:")
    print()
    for a in arms:
        print(f"- {'off' if a == 0 else f'{a:g} s'}: " + ", ".join(f"{x:.2f}" for x in tpot[a]))


if __name__ == "__main__":
    main()
