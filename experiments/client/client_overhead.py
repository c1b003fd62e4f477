"""Client overhead: our streaming client vs sglang's own benchmark client, side by side in one run.

Not a test: a script whose numbers go in the notes. It starts ``shared/tools/synthetic_sse_server.py``
pinned to core 1 (the server never waits on a model, so the client is the bottleneck) and runs each
client pinned to core 0, each run in a fresh process, alternating ours / peer so machine drift and the
other engineers' load hit both alike. Per run: sustained chunks/s (total chunks / duration) and median
TTFT; the table gives the median over repetitions and the ratio ours/peer (≥ 1.0 is the target).

    python experiments/client/client_overhead.py --peer-python /tmp/peer-venv/bin/python

The peer is ``python -m sglang.benchmark.serving --backend sglang-oai-chat`` installed in a throwaway venv
(shared/tools/README.md says how); without --peer-python only our client runs.

Our run also reports how much of the client core went into the post-stream SSE parse
(``record_from_response``), which runs on the same event loop as the reads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "_lib"))
from machine_state import loadavg, others

SERVER = REPO.parent / "shared" / "tools" / "synthetic_sse_server.py"
DEFAULT_OUT = HERE / "client_overhead.out.md"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"synthetic server on port {port} did not come up")


# --------------------------------------------------------------------------------------------- ours (child)
def run_ours(port: int, requests: int, chunks: int, concurrency: int) -> dict:
    """Runs inside a process pinned to one core; returns the measured numbers."""
    sys.path.insert(0, str(REPO / "src"))
    from types import SimpleNamespace

    from pytest_llmbench.engines.llamacpp import LlamaCppEngine
    from pytest_llmbench.metrics import scenario_metrics
    from pytest_llmbench.workload import requests as req_mod
    from pytest_llmbench.workload.requests import run_requests

    server = SimpleNamespace(
        port=port, engine=LlamaCppEngine(), config=SimpleNamespace(name="m", request={}), alive=lambda: True
    )  # run_requests watches that its server is still there
    parse_s = [0.0]
    real = req_mod.record_from_response

    def timed(index, raw, engine):  # the post-stream parse, timed on the same loop
        t = time.thread_time()  # CPU time: other load on the core must not count as parse time
        try:
            return real(index, raw, engine)
        finally:
            parse_s[0] += time.thread_time() - t

    req_mod.record_from_response = timed
    prompt = [{"role": "user", "content": "benchmark " * 32}]
    body = {"messages": prompt, "max_tokens": chunks, "temperature": 0.0, "ignore_eos": True}
    warm = run_requests(server, [dict(body, max_tokens=32)], concurrency=1, path="/v1/chat/completions")
    assert warm[0].ok, warm[0].error
    parse_s[0] = 0.0
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    records = run_requests(server, [body] * requests, concurrency=concurrency, path="/v1/chat/completions")
    duration = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    m = scenario_metrics(records, duration)
    total_chunks = sum(len(r.chunk_times) for r in records if r.ok)
    return {
        "completed": m["completed"],
        "failed": m["failed"],
        "duration": duration,
        "total_output_tokens": m["total_output_tokens"],
        "total_chunks": total_chunks,
        "chunks_per_s": total_chunks / duration,
        "median_ttft_ms": m["median_ttft_ms"],
        "cpu_s": cpu,
        "parse_s": parse_s[0],
        "errors": sorted({r.error for r in records if not r.ok})[:3],
    }


# ------------------------------------------------------------------------------------------- orchestration
def pinned(core: int, argv: list[str]) -> list[str]:
    return ["taskset", "-c", str(core), *argv] if shutil.which("taskset") else argv


def measure_ours(port: int, args, concurrency: int) -> dict:
    cmd = pinned(
        0,
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--_child",
            str(port),
            str(concurrency),
            "--requests",
            str(args.requests),
            "--chunks",
            str(args.chunks),
        ],
    )
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout)
    if out.returncode != 0:
        raise RuntimeError(f"our client failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_peer(port: int, args, concurrency: int, tmp: Path) -> dict:
    out_file = tmp / f"peer-{concurrency}-{time.monotonic_ns()}.jsonl"
    cmd = pinned(
        0,
        [
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
            "32",
            "--random-output-len",
            str(args.chunks),
            "--random-range-ratio",
            "1",
            "--num-prompts",
            str(args.requests),
            "--max-concurrency",
            str(concurrency),
            "--warmup-requests",
            "1",
            "--seed",
            "1",
            "--output-file",
            str(out_file),
        ],
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TQDM_DISABLE="1")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout, env=env, cwd=tmp)
    if out.returncode != 0 or not out_file.exists():
        raise RuntimeError(f"peer failed (rc {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    r = json.loads(out_file.read_text().strip().splitlines()[-1])
    return {
        "completed": r["completed"],
        "failed": args.requests - r["completed"],
        "duration": r["duration"],
        "total_output_tokens": r["total_output_tokens"],
        "total_chunks": r["total_output_tokens"],
        "chunks_per_s": r["total_output_tokens"] / r["duration"],
        "median_ttft_ms": r["median_ttft_ms"],
        "cpu_s": None,  # its process CPU is mostly start-up (torch, tokenizer), not the run: not comparable
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-python", help="python of a venv with sglang==0.5.23 (the peer); omit to run ours only")
    ap.add_argument("--tokenizer", default="/tmp/smol-tok", help="tokenizer dir for the peer's random-ids dataset")
    ap.add_argument("--requests", type=int, default=1024)
    ap.add_argument("--chunks", type=int, default=512, help="chunks (tokens) per streamed response")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 256])
    ap.add_argument("--reps", type=int, default=2, help="repetitions of each client per concurrency (≥ 2)")
    ap.add_argument("--batch", type=int, default=8, help="server chunks per socket write")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--run-timeout", type=float, default=600.0)
    ap.add_argument("--_child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args._child:
        port, conc = args._child
        print(json.dumps(run_ours(port, args.requests, args.chunks, conc)))
        return

    if not SERVER.exists():
        sys.exit(f"synthetic server not found at {SERVER}")
    port = free_port()
    server = subprocess.Popen(
        pinned(1, [sys.executable, str(SERVER), str(port), str(args.batch)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    load_before, others_before = loadavg(), others()
    results: dict[tuple[str, int], list[dict]] = {}
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    try:
        wait_ready(port)
        with tempfile.TemporaryDirectory(prefix="llmbench-peer-") as tmpd:
            tmp = Path(tmpd)
            for conc in args.concurrency:
                for rep in range(args.reps):
                    clients = ["ours", "peer"] if args.peer_python else ["ours"]
                    if rep % 2:
                        clients.reverse()  # ABBA order: neither client always goes first
                    for who in clients:
                        r = measure_ours(port, args, conc) if who == "ours" else measure_peer(port, args, conc, tmp)
                        r["load"] = loadavg()
                        results.setdefault((who, conc), []).append(r)
                        extra = f", client CPU {r['cpu_s']:.2f} s, parse {r['parse_s']:.2f} s" if "parse_s" in r else ""
                        print(
                            f"  {who:4s} c={conc:<4d} rep {rep + 1}: {r['chunks_per_s']:>9,.0f} chunks/s, "
                            f"median TTFT {r['median_ttft_ms']:7.1f} ms, {r['completed']} ok / {r['failed']} failed, "
                            f"{r['duration']:.2f} s{extra}, load {r['load']}",
                            flush=True,
                        )
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
    md = report(args, results, started, load_before, others_before)
    print(md)
    args.out.write_text(md)
    print(f"written to {args.out}")


def report(args, results, started: str, load_before: str, others_before: str) -> str:
    med = statistics.median
    peer = bool(args.peer_python)
    lines = [
        "# Client overhead: pytest-llmbench streaming client vs sglang.benchmark.serving",
        "",
        f"{started}; {args.requests} requests × {args.chunks} chunks, synthetic SSE server (batch {args.batch}) "
        f"pinned to core 1, each client in a fresh process pinned to core 0; {args.reps} repetitions per client, "
        "alternated (ABBA). Medians over repetitions; ratio = ours / peer (chunks/s: ≥ 1 is better for us; "
        "TTFT: ≤ 1 is better for us).",
        "",
    ]
    head = "| concurrency | ours chunks/s | peer chunks/s | ratio | ours median TTFT ms | peer median TTFT ms | TTFT ratio | ours parse share |"
    lines += [head, "|---|---|---|---|---|---|---|---|"]
    for conc in args.concurrency:
        o = results.get(("ours", conc), [])
        p = results.get(("peer", conc), [])
        oc, ot = med(r["chunks_per_s"] for r in o), med(r["median_ttft_ms"] for r in o)
        share = med(r["parse_s"] / r["cpu_s"] for r in o if r["cpu_s"] > 0)
        if peer and p:
            pc, pt = med(r["chunks_per_s"] for r in p), med(r["median_ttft_ms"] for r in p)
            lines.append(
                f"| {conc} | {oc:,.0f} | {pc:,.0f} | **{oc / pc:.2f}** | {ot:.1f} | {pt:.1f} | {ot / pt:.2f} | {share:.0%} |"
            )
        else:
            lines.append(f"| {conc} | {oc:,.0f} | – | – | {ot:.1f} | – | – | {share:.0%} |")
    lines += [
        "",
        "Every run:",
        "",
        "| client | concurrency | chunks/s | median TTFT ms | ok | failed | duration s | client CPU s | parse CPU s | load avg after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (who, conc), runs in results.items():
        for r in runs:
            cpu = "–" if r["cpu_s"] is None else f"{r['cpu_s']:.2f}"
            parse = f"{r['parse_s']:.2f}" if "parse_s" in r else "–"
            lines.append(
                f"| {who} | {conc} | {r['chunks_per_s']:,.0f} | {r['median_ttft_ms']:.1f} | {r['completed']} | "
                f"{r['failed']} | {r['duration']:.2f} | {cpu} | {parse} | {r['load']} |"
            )
    lines += [
        "",
        f"Machine: {os.cpu_count()} cores shared with other sessions. Load average (1/5/15 min) before the run: "
        f"{load_before}; busiest other processes at start (ps %CPU over each process's lifetime): {others_before}.",
        '"parse share": time in the post-stream SSE parse (`record_from_response`) over the client process\'s CPU time.',
        "",
        "Command: `python experiments/client/client_overhead.py " + " ".join(sys.argv[1:]) + "`",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
