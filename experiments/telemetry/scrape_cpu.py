"""What one /metrics scrape costs in CPU, both sides, and the bound it puts on the scrape's TPOT cost (issue 59).

The A/B of scrape intervals (scrape_cost.py) is limited by the shared host: per-run TPOT varies ~8%, so its
interval is ±3% and cannot show "under 1%" without ~250 rounds. This measures the cost where it is made:
one real llama-server (cpu.yaml's smol-nospec) idle, and the scraper the sessions use (telemetry/scraper.py:
``for_server``; its ``sample()``: the HTTP GET, the Prometheus parse, the mapping) called N times in a row.

- client CPU: this thread's CPU time over the N samples (``time.thread_time``);
- server CPU: the server process's user + system time over them (/proc/PID/stat), less the same process's
  CPU over an equally long idle window with no scrape (its own housekeeping).

A scrape every ``i`` seconds takes (client + server per scrape) / i of one core. On the 2-core host a decode
step of the -t 2 server waits on both cores, so the worst case is that every CPU-second the scrape takes
lands on the step's critical path: the TPOT cost is at most that fraction (an upper bound, not an estimate).

    python experiments/telemetry/scrape_cpu.py --scrapes 2000 > experiments/telemetry/scrape_cpu.out.md
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from pytest_llmbench.config import load_config_file
from pytest_llmbench.server import start_server
from pytest_llmbench.telemetry.scraper import for_server

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (its threads included), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime: fields 14 and 15 of stat(5)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=2000)
    ap.add_argument("--config", default="smol-nospec")
    ap.add_argument("--intervals", type=float, nargs="+", default=[0.1, 0.25, 1.0])
    args = ap.parse_args()
    cfg = {c.name: c for c in load_config_file(ROOT / "benches/configs/cpu.yaml")}[args.config]
    with tempfile.TemporaryDirectory(prefix="llmbench-scrape-cpu-") as tmp:
        server = start_server(cfg, Path(tmp) / "server")
        try:
            pid = server.handle.pids()[0]
            scraper = for_server(server, 1.0)
            for _ in range(20):  # warm: the connection, the parse's first allocations
                scraper.sample()
            wall0, srv0, cli0 = time.monotonic(), process_cpu_s(pid), time.thread_time()
            for _ in range(args.scrapes):
                scraper.sample()
            wall, srv, cli = time.monotonic() - wall0, process_cpu_s(pid) - srv0, time.thread_time() - cli0
            idle0 = process_cpu_s(pid)
            time.sleep(wall)  # the same length of time with no scrape: the server's own idle CPU
            idle = process_cpu_s(pid) - idle0
            samples = len(scraper.timeline.samples)
            series = len(scraper.timeline.samples[-1]) - 1
            scraper.stop()
        finally:
            server.stop()
    per_client, per_server = cli / args.scrapes, max(0.0, srv - idle) / args.scrapes
    per = per_client + per_server
    print("# What one /metrics scrape costs in CPU, and the bound on its TPOT cost (issue 59)")
    print()
    print(
        f"Command: `python experiments/telemetry/scrape_cpu.py --scrapes {args.scrapes}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; 2-core CPU, load average "
        f"{os.getloadavg()[0]:.2f} at the end)"
    )
    print()
    print(
        f"Config {args.config} (cpu.yaml), idle; {args.scrapes} samples of the sessions' scraper in a row "
        f"({samples} kept, {series} readings each) in {wall:.2f} s."
    )
    print()
    print("| side | CPU over the scrapes (s) | per scrape (ms) |")
    print("|---|---|---|")
    print(f"| client (GET, parse, map; this thread) | {cli:.3f} | {1000 * per_client:.3f} |")
    print(f"| server (llama-server, less {idle:.3f} s idle over as long) | {srv:.3f} | {1000 * per_server:.3f} |")
    print(f"| both | | **{1000 * per:.3f}** |")
    print()
    print("| scrape interval | share of one core | bound on the TPOT cost |")
    print("|---|---|---|")
    for i in args.intervals:
        print(f"| {i:g} s | {100 * per / i:.3f}% | ≤ {100 * per / i:.3f}% |")


if __name__ == "__main__":
    main()
