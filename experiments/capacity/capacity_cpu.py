"""smol-nospec's capacity under an SLO on the CPU (issue 58), and the spread of repeated searches (the noise the
simulation needs).

Steps, each against a real llama-server (benches/configs/cpu.yaml's smol-nospec, SmolLM2-135M on 2 cores):
1. the closed loop at the config's 4 slots: its request throughput is the rate the open loop is measured against;
2. the unloaded latency (1 user): the SLO is chosen from it (``--slo-x`` times its median E2E latency, and
   the same multiple of its median TTFT), so the SLO is one this machine can meet when not overloaded;
3. ``--searches`` capacity searches (capacity/search.py through ``run_scenario``), each on a fresh server:
   the capacity per search, and the SD of log capacity between searches.

Run under the heavy lock (the host is shared: every number is read on a shared 2-core machine):
``flock /tmp/llmbench-heavy.lock nice -n 5 python experiments/capacity/capacity_cpu.py --out experiments/data/capacity/capacity_cpu``
The markdown goes to stdout; each scenario's record goes to ``--out``/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_llmbench.config import load_config_file
from pytest_llmbench.records.results import scenario_line
from pytest_llmbench.server import start_server
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult, run_scenario

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "benches" / "configs" / "cpu.yaml"
#: short prompts and answers: a probe is seconds, not minutes, on 2 cores
BASE = {"dataset": "random", "input_len": 32, "output_len": 8, "seed": 1, "scrape_interval_s": 0.0}


def write(out: Path | None, result: ScenarioResult, cfg, label: str) -> None:
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    line = scenario_line(result, cfg)
    line["config"] = cfg.name
    line["label"] = label
    with open(out / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(line, default=str) + "\n")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="smol-nospec")
    p.add_argument("--searches", type=int, default=3)
    p.add_argument("--slo-x", type=float, default=3.0, help="SLO = this × the unloaded median (TTFT and E2E)")
    p.add_argument("--slo", default=None, help="a fixed SLO (ttft:MS,e2el:MS) instead of --slo-x")
    p.add_argument("--probe-n", type=int, default=24, help="requests per probe")
    p.add_argument("--target", type=float, default=0.9)
    p.add_argument("--confidence", type=float, default=0.75)
    p.add_argument("--max-probes", type=int, default=6)
    p.add_argument("--resolution", type=float, default=1.15)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    cfg = {c.name: c for c in load_config_file(CONFIGS)}[args.config]
    work = Path(tempfile.mkdtemp(prefix="capacity-cpu-"))
    print(f"# {args.config}'s capacity under an SLO on the CPU\n")
    print(
        f"`python experiments/capacity/capacity_cpu.py {' '.join(argv)}` (shared 2-core host; other engineers' runs)\n"
    )

    t0 = time.time()
    server = start_server(cfg, work / "s0")
    try:
        closed = run_scenario(server, Scenario("closed-4u", num_prompts=24, concurrency=4, warmup=2, **BASE))
        write(args.out, closed, cfg, "closed-4u")
        one = run_scenario(server, Scenario("unloaded-1u", num_prompts=8, concurrency=1, warmup=0, **BASE))
        write(args.out, one, cfg, "unloaded-1u")
    finally:
        server.stop()
    cm, om = closed.metrics, one.metrics
    closed_rps = cm["request_throughput"]
    print("## 1. closed loop and unloaded latency\n")
    print("| scenario | req/s | output tok/s | median TTFT ms | median E2E ms | failed |")
    print("|---|---|---|---|---|---|")
    for name, m in (("closed loop, 4 users", cm), ("1 user", om)):
        print(
            f"| {name} | {m['request_throughput']:.2f} | {m['output_throughput']:.1f} | {m['median_ttft_ms']:.0f} | "
            f"{m['median_e2e_latency_ms']:.0f} | {m['failed']} |"
        )
    if args.slo:
        slo = args.slo
    else:
        slo = (
            f"ttft:{math.ceil(args.slo_x * om['median_ttft_ms'])},"
            f"e2el:{math.ceil(args.slo_x * om['median_e2e_latency_ms'])}"
        )
    print(f"\nSLO: `{slo}` ({args.slo_x:g} × the 1-user medians)" if not args.slo else f"\nSLO: `{slo}` (given)")
    spec = {
        "target": args.target,
        "confidence": args.confidence,
        "start_rps": round(max(0.1, 0.5 * closed_rps), 3),
        "resolution": args.resolution,
        "max_probes": args.max_probes,
        "repeats": 0,
    }
    print(f"\ncapacity spec: {spec}; {args.probe_n} requests a probe\n")
    print("## 2. capacity searches, each on a fresh server\n")
    print("| search | capacity req/s | highest passed | lowest failed | probes (rate: good/n) | stop | s |")
    print("|---|---|---|---|---|---|---|")
    caps = []
    for i in range(args.searches):
        started = time.time()
        server = start_server(cfg, work / f"s{i + 1}")
        try:
            sc = Scenario(
                "capacity", num_prompts=args.probe_n, concurrency=64, warmup=2, slo=slo, capacity=spec, **BASE
            )
            result = run_scenario(server, sc)
        finally:
            server.stop()
        write(args.out, result, cfg, f"search-{i + 1}")
        m = result.metrics
        caps.append(m["capacity_rps"])
        probes = ", ".join(f"{q['rate']:.3g}: {q['good']}/{q['n']}" for q in m["capacity"]["probes"])
        print(
            f"| {i + 1} | {m['capacity_rps']:.3f} | {m['capacity_passed_rps']} | {m['capacity_failed_rps']} | "
            f"{probes} | {m['capacity_stop']} | {time.time() - started:.0f} |",
            flush=True,
        )
    logs = np.log([c for c in caps if c > 0])
    if logs.size > 1:
        print(
            f"\ncapacity: geometric mean {math.exp(logs.mean()):.3f} req/s over {logs.size} searches "
            f"({math.exp(logs.mean()) / closed_rps:.2f} × the closed loop's {closed_rps:.2f} req/s); "
            f"SD of log capacity between searches {logs.std(ddof=1):.3f}"
        )
    print(f"\n({time.time() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
