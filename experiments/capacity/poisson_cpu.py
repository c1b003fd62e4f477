"""A Poisson scenario's mean TTFT against its rate on the CPU, from below to beyond the closed loop's throughput
(issue 58): queueing says the wait grows slowly while the rate is well below the service rate, steeply near it,
and without bound beyond it (the queue grows for as long as requests keep coming).

One real llama-server (benches/configs/cpu.yaml smol-nospec, SmolLM2-135M on 2 cores, 4 slots): first the closed
loop at 4 users (its request throughput is the reference rate), then Poisson arrivals (burstiness 1, seed
fixed) at ``--fractions`` of that throughput, the same prompts at each rate.

Run under the heavy lock (shared 2-core host; say so next to the numbers):
``flock /tmp/llmbench-heavy.lock nice -n 5 python experiments/capacity/poisson_cpu.py --out /tmp/poisson_cpu`` (output: poisson_cpu.out.md)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from capacity_cpu import BASE, CONFIGS, write

from pytest_llmbench.config import load_config_file
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.scenario import Scenario, run_scenario


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="smol-nospec")
    p.add_argument("--fractions", default="0.25,0.5,0.75,0.9,1.1,1.3")
    p.add_argument("--n", type=int, default=32, help="requests per rate")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    cfg = {c.name: c for c in load_config_file(CONFIGS)}[args.config]
    print(f"# Poisson arrivals: mean TTFT against rate ({args.config}, CPU)\n")
    print(
        f"`python experiments/capacity/poisson_cpu.py {' '.join(argv)}` (shared 2-core host; other engineers' runs)\n"
    )
    t0 = time.time()
    server = start_server(cfg, Path(tempfile.mkdtemp(prefix="poisson-cpu-")) / "s")
    rows = []
    try:
        closed = run_scenario(server, Scenario("closed-4u", num_prompts=args.n, concurrency=4, warmup=2, **BASE))
        write(args.out, closed, cfg, "closed-4u")
        mu = closed.metrics["request_throughput"]
        for f in [float(x) for x in args.fractions.split(",")]:
            sc = Scenario(f"poisson-{f:g}x", num_prompts=args.n, concurrency=256, warmup=0, request_rate=f * mu, **BASE)
            r = run_scenario(server, sc)
            write(args.out, r, cfg, sc.name)
            rows.append((f, r.metrics))
    finally:
        server.stop()
    cm = closed.metrics
    print(
        f"closed loop, 4 users: {mu:.2f} req/s, mean TTFT {cm['mean_ttft_ms']:.0f} ms, "
        f"median E2E {cm['median_e2e_latency_ms']:.0f} ms\n"
    )
    print(
        "| rate / closed-loop | offered req/s | achieved req/s | mean TTFT ms | p99 TTFT ms | mean E2E ms | p99 send lag ms | client-limited | failed |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for f, m in rows:
        print(
            f"| {f:g} | {m['request_rate']:.2f} | {m['request_throughput']:.2f} | {m['mean_ttft_ms']:.0f} | "
            f"{m['p99_ttft_ms']:.0f} | {m['mean_e2e_latency_ms']:.0f} | {m.get('p99_send_lag_ms', float('nan')):.1f} | "
            f"{m.get('client_limited')} | {m['failed']} |"
        )
    ttft = [m["mean_ttft_ms"] for _, m in rows]
    rho = stats.spearmanr([f for f, _ in rows], ttft)
    below = [m["mean_ttft_ms"] for f, m in rows if f < 1]
    beyond = [m["mean_ttft_ms"] for f, m in rows if f > 1]
    print(
        f"\nSpearman rank correlation of rate and mean TTFT: {rho.statistic:.2f}; mean TTFT at the lowest rate "
        f"{ttft[0]:.0f} ms, at the highest {ttft[-1]:.0f} ms (×{ttft[-1] / ttft[0]:.1f}); "
        f"largest below the closed loop's rate {max(below):.0f} ms, smallest beyond it {min(beyond):.0f} ms"
        if below and beyond
        else ""
    )
    print(f"\n({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
