"""The gate's machine calibration (gate/calibration.py) in two machine states: as found, and with a busy
loop pinned to one of the cores — how far apart the states are, and how much one state scatters.

No server is started (the calibration is a numpy GEMV). The machine is shared with other engineers, so
"as found" already includes their load; that scatter is what decides whether a ±25% comparability band
can hold here. Run: ``python benches/perf/calibration_states.py [--n 8]`` (saved as calibration_states.out.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from machine_state import loadavg, others  # noqa: E402  (sibling script module)

from pytest_llmbench.gate.calibration import TOLERANCE, comparable, measure  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8)
    args = ap.parse_args(argv)
    print(f"# Calibration in two machine states ({time.strftime('%Y-%m-%d %H:%M')})\n")
    print(f"Load {loadavg()}; busiest: {others()}\n")
    found = [measure() for _ in range(args.n)]
    busy = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1)
        loaded = [measure() for _ in range(args.n)]
    finally:
        busy.kill()
        busy.wait()
    after = [measure() for _ in range(args.n)]
    print("| state | GB/s (each measure) | median | max/min |")
    print("|---|---|---:|---:|")
    for name, xs in (("as found", found), ("busy loop on core 0", loaded), ("as found, again", after)):
        print(f"| {name} | {', '.join(f'{x:.1f}' for x in xs)} | {np.median(xs):.1f} | {max(xs) / min(xs):.2f} |")
    ref = float(np.median(found))
    same = [comparable(ref, x)[0] for x in found + after]
    diff = [not comparable(ref, x)[0] for x in loaded]
    print(f"\nAgainst the first state's median ({ref:.1f}) with the ±{TOLERANCE:.0%} band: "
          f"{sum(same)}/{len(same)} same-state measures comparable, {sum(diff)}/{len(diff)} busy-loop "
          f"measures flagged not comparable.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
