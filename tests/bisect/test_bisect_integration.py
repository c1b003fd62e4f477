"""A real bisect on the CPU: ``python -m pytest_llmbench bisect`` over 8 "builds" of the real llama-server
(SmolLM2-135M), each step a real pytest session comparing two of them.

Each build is a folder whose ``llama-server`` script execs the installed llama-server; from position 5 on
the script adds a calibrated slowdown (``SLOW_ARGS`` of experiments/bisect/bisect_cpu.py, whose set-up this test
runs), and build 3 exits 1 at start (a broken build). The
bisect must compare the ends first, skip build 3 by name, find build 5 and confirm the pair 4 → 5, and
write its record, table, summary.md and report.html. It runs as a bisect spread over two device leases does:
a first run whose budget holds only the ends, then ``--resume`` from its folder, which answers the ends from
the record and goes on live. Slow (a handful of sessions with two servers each); the rounds per step are the
floor (4) rather than the script's 6, on shorter prompts and answers.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from ..conftest import process_alive

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
N, FIRST_SLOW, BROKEN = 8, 5, 3


def _experiment():
    """experiments/bisect/bisect_cpu.py: the committed CPU bisect; this test sets up what it runs (its bench at
    smaller sizes, at most 4 rounds a step)."""
    spec = importlib.util.spec_from_file_location("bisect_cpu", ROOT / "experiments" / "bisect" / "bisect_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_the_bisect_finds_the_first_slower_build_and_skips_the_broken_one(tmp_path):
    exp = _experiment()
    exp.prepare(tmp_path / "work")
    # the script's bench on 16-token prompts for 8-token answers (not 64 and 24): TPOT, the metric judged, is
    # the same per-token cost over 7 gaps instead of 23, and a step's rounds take ~4 s instead of ~10
    bench = tmp_path / "work" / "test_bench.py"
    assert "input_len=64, output_len=24," in exp.BENCH, "the script's bench changed: update the sizes here"
    bench.write_text(exp.BENCH.replace("input_len=64, output_len=24,", "input_len=16, output_len=8,"))
    builds = exp.make_builds(tmp_path / "builds", N, FIRST_SLOW, BROKEN, exp.SLOW_ARGS)
    first, out = tmp_path / "lease1", tmp_path / "bisect"
    # --max-rounds 4 (the last one given wins over the script's 6): the floor of 4 judged rounds (3 df), where
    # the F32 builds' TPOT x2.5 still read [2.4, 2.7] and the same pair x1.0 [0.92, 1.07] (64/24 tokens).
    # A 1-s budget: the ends run (the first step always does: it measures the cost), nothing after them fits
    _, stdout, proc = exp.run_bisect(tmp_path / "work", builds, first, ["--max-rounds", "4", "--budget", "1"])
    assert proc.returncode == 1, stdout[-4000:]
    assert "bisect: unknown between b0 and b7: the budget is spent" in stdout, stdout[-4000:]
    assert (
        f"--resume {first} (and a budget): builds to have ready, in the order the next steps need them: b0, b3, b1, b5"
        in stdout
    )
    (ends,) = [r for r in _lines(first / "results.jsonl") if r["record"] == "bisect_step"]
    assert (ends["kind"], ends["outcome"]) == ("ends", "different"), ends
    _, stdout, proc = exp.run_bisect(tmp_path / "work", builds, out, ["--max-rounds", "4", "--resume", str(first)])
    assert proc.returncode == 0, stdout[-4000:]
    assert "resuming" in stdout and f"recorded in {first / 'results.jsonl'}:1" in stdout, stdout[-4000:]
    rows = _lines(out / "results.jsonl")
    (rec,) = [r for r in rows if r["record"] == "bisect"]
    assert rec["status"] == "culprit" and rec["culprit"] == "b5" and rec["last_good"] == "b4", rec["message"]
    states = {b["label"]: b["state"] for b in rec["builds"]}
    assert states["b0"] == "good" and states["b7"] == "bad" and states["b3"] == "skip"
    steps = rec["steps"]
    assert (steps[0]["kind"], steps[0]["reference"], steps[0]["candidate"]) == ("ends", "b0", "b7")
    # the ends came from the first run's record, at its cost, and not into this run's GPU-seconds
    assert steps[0]["replayed_from"] == f"{first / 'results.jsonl'}:1" and steps[0]["gpu_s"] == ends["gpu_s"]
    assert steps[0]["results_dir"] == ends["results_dir"] and not any(s["replayed_from"] for s in steps[1:])
    assert rec["gpu_s"] == pytest.approx(sum(s["gpu_s"] for s in steps[1:]))
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
            assert s["metric"] == "mean_tpot_ms" and s["ci_low"] > 1.2, s  # F32 weights: each token slower
        assert (Path(s["results_dir"]) / "session.log").is_file()
    assert [r["step"] for r in rows if r["record"] == "bisect_step"] == [s["step"] for s in steps]
    # every build that ran is named by its folder and program hash
    b5 = next(b for b in rec["builds"] if b["label"] == "b5")
    assert b5["identity"]["folder"] == str(builds[5].resolve()) and b5["identity"]["binary_sha256"]
    # the table and the finding in the terminal, summary.md and report.html
    assert "ratio [95% CI]" in stdout and "bisect: first slower build: b5 (last good b4" in stdout
    # summary.md opens with the one session verdict (records/verdict.py); the bisect is its reader
    headline = (out / "summary.md").read_text().splitlines()[0]
    assert "REGRESSED" in headline and "bisect: first slower build: b5" in headline, headline
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
