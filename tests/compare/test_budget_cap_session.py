"""Issue 57 through pytest with the real llama-server: the comparison budget is a cap. Both arms' bin is a
wrapper that sleeps, then runs the real llama-server (a slow start, the user's view); at a budget that
cannot hold the 4-unit floor the session says so before the comparison's first start, plays only the timed
rounds, and ends "budget too small to judge" with what the floor would cost, nothing judged."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmbench.engines.llamacpp import llamacpp_binary

from ..conftest import process_alive, short_context

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DELAY_S = 1.5  # each start sleeps this long first: 7 starts of the floor cannot fit the budget below
BUDGET_S = 4

BENCH = """
import pytest
from pytest_llmbench import Scenario

SC = Scenario("tiny", dataset="random", input_len=16, output_len=8, num_prompts=2, concurrency=1, warmup=1, seed=1)

@pytest.mark.llm_configs("nospec")
def test_serving(llm_server, bench):
    result = bench.run(SC)
    assert result.metrics["failed"] == 0, result.errors
    bench.check("output_throughput", result.metrics["output_throughput"])
"""


def _wrapper(folder: Path) -> Path:
    folder.mkdir(parents=True)
    real = shlex.quote(str(llamacpp_binary()))
    (folder / "llama-server").write_text(f'#!/usr/bin/env bash\nsleep {DELAY_S}\nexec {real} "$@"\n')
    (folder / "llama-server").chmod(0o755)
    return folder


def _records(out: Path, kind: str) -> list[dict]:
    rows = [json.loads(line) for f in sorted(out.glob("results*.jsonl")) for line in f.read_text().splitlines()]
    return [r for r in rows if r.get("record") == kind]


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], int]:
    root = tmp_path_factory.mktemp("budget-cap")
    (root / "test_bench.py").write_text(BENCH)
    binary = _wrapper(root / "bin")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "test_bench.py",
            "--llmbench-configs",
            str(short_context()),
            "--results-dir",
            "out",
            "-k",
            "smol-nospec",
            "--llmbench-reference-bin",
            str(binary),
            "--llmbench-candidate-bin",
            str(binary),
            "--llmbench-compare-budget",
            str(BUDGET_S),
            "--llmbench-compare-alpha",
            "0.001",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])},
    )
    return root / "out", proc.stdout.splitlines(), proc.returncode


def test_a_budget_below_the_floor_is_said_before_the_first_start_and_ends_not_judged(capped):
    out, lines, returncode = capped
    warn = [i for i, line in enumerate(lines) if "budget too small to judge: the 4-unit floor needs at least" in line]
    assert warn, "\n".join(lines[-40:])
    # said before the comparison's first start: the plan table comes after its first timed rounds
    plan = next(i for i, line in enumerate(lines) if line.startswith("llmbench compare plan: "))
    assert warn[0] < plan and "not judged (budget too small to judge: the 4-unit floor would cost ~" in lines[plan + 1]
    (c,) = _records(out, "comparison")
    assert c["verdict"] == "inconclusive" and c["stop"] == "too-small", c
    assert c["stop_reason"].startswith("budget too small to judge: the 4-unit floor would cost ~")
    assert returncode == 0  # inconclusive is not a failure without --llmbench-strict


def test_the_session_stays_within_one_unit_of_its_budget(capped):
    """What the comparison spent (the reference's starts, every block) is at most the budget and one unit
    (a fresh pair and its two rounds at the measured costs); the floor would have been 4 units."""
    out, _lines, _ = capped
    (unit_plan,) = _records(out, "comparison_unit_plan")
    assert unit_plan["units"] == 0 and unit_plan["pilot_units"] == 0 and unit_plan["budget_s"] == BUDGET_S
    starts = [s for s in _records(out, "arm_start") if s["role"] == "reference"]
    blocks = _records(out, "comparison_block")
    spent = sum(s["startup_s"] for s in starts) + sum(b["wall_s"] for b in blocks)
    one_unit = unit_plan["start_s"] + 2 * unit_plan["round_s"] + unit_plan["warmup_s"]
    assert len(starts) == 1 and spent <= BUDGET_S + one_unit, (spent, one_unit)
    assert {b["unit"] for b in blocks if not b["warmup"]} == {0}
    pids = [pid for r in _records(out, "server") for pid in r["pids"]]
    assert pids and not any(process_alive(pid) for pid in pids)
