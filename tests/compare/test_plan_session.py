"""Issue 38 through pytest with the real llama-server: a slow start (a wrapper folder whose llama-server
sleeps, then executes the real one, passed as both arms' bin: the user's view), a reference whose first
start fails once, a session budget, the plan table before the first full unit, the records a dry run needs,
and the dry run on them. Slow: one session, two arms, ~10 starts."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmbench.cli.compare_plan import main as compare_plan
from pytest_llmbench.engines.llamacpp import llamacpp_binary

from ..conftest import process_alive, short_context

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CPU_YAML = short_context()  # cpu.yaml at a 4096-token context: the same servers, quicker to start
DELAY_S = 0.25  # long enough to be told from a plain start in every arm_start record

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


def _wrapper(folder: Path, *, fail_first: bool) -> Path:
    """``folder/llama-server``: sleeps DELAY_S, then the real one; with ``fail_first`` its first start exits 1."""
    folder.mkdir(parents=True)
    real = shlex.quote(str(llamacpp_binary()))
    fail = f'[ -e {folder}/failed ] || {{ touch {folder}/failed; echo "simulated start failure" >&2; exit 1; }}\n'
    (folder / "llama-server").write_text(
        f'#!/usr/bin/env bash\n{fail if fail_first else ""}sleep {DELAY_S}\nexec {real} "$@"\n'
    )
    (folder / "llama-server").chmod(0o755)
    return folder


def _records(out: Path, kind: str) -> list[dict]:
    rows = [json.loads(line) for f in sorted(out.glob("results*.jsonl")) for line in f.read_text().splitlines()]
    return [r for r in rows if r.get("record") == kind]


class Run:
    """A finished pytest subprocess: its output lines and exit code."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.lines = proc.stdout.splitlines()
        self.returncode = proc.returncode


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """One session for the module's tests (a real session with ~10 slow starts costs about a minute)."""
    root = tmp_path_factory.mktemp("plan-session")
    (root / "test_bench.py").write_text(BENCH)
    reference = _wrapper(root / "ref-bin", fail_first=True)
    candidate = _wrapper(root / "cand-bin", fail_first=False)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "test_bench.py",
            "--llmbench-configs",
            str(CPU_YAML),
            "--results-dir",
            "out",
            "--runner",
            "ci-a",
            "-k",
            "smol-nospec",
            "--llmbench-reference-bin",
            str(reference),
            "--llmbench-candidate-bin",
            str(candidate),
            "--llmbench-compare-budget",
            "300",  # the session's: room for the 4-unit floor on a throttled host (it played 3 units in 90 s beside a busy one)
            "--llmbench-max-rounds",
            "8",  # 4 units of 2 rounds at most: the floor, so the test stays short
            "--llmbench-compare-alpha",
            "0.001",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])},
    )
    return root / "out", Run(proc)


def test_the_plan_table_comes_before_the_first_full_unit(session):
    out, result = session
    lines = result.lines
    assert result.returncode == 0 and any(" 1 passed" in line for line in lines), "\n".join(lines[-40:])
    head = next(i for i, line in enumerate(lines) if line.startswith("llmbench compare plan: "))
    assert "of the session's 5 min left for 1 scenario(s)" in lines[head]  # 300 s, in minutes
    assert lines[head + 1].startswith("  smol-nospec tiny: 4 units of 2 rounds, ~")
    (plan,) = _records(out, "comparison_unit_plan")
    assert (plan["unit_rounds"], plan["units"], plan["pilot_units"]) == (2, 4, 4)
    assert plan["session_budget_s"] == 300 and 0 < plan["budget_s"] <= 300 and plan["predicted_s"] > 0
    # unit 0 keeps the warm-up's pair: its cost is the two recorded starts, each past the wrapper's sleep
    assert plan["start_s"] >= 2 * DELAY_S and plan["round_s"] > 0
    assert plan["table"][1] == lines[head + 1]
    (after,) = _records(out, "comparison_plan")
    assert after["units"] == 4 and after["unit_rounds"] == 2 and after["predicted_s"] > 0


def test_a_start_that_fails_once_is_retried_and_named(session):
    out, result = session
    (retry,) = _records(out, "arm_start_retry")
    assert retry["role"] == "reference" and "simulated start failure" in retry["error"]
    assert any(
        "reference arm (" in line and "failed to start once and was started again" in line for line in result.lines
    )
    starts = _records(out, "arm_start")
    assert all(s["startup_s"] >= DELAY_S for s in starts)  # the wrapper's sleep is in every start
    # the warm-up's reference start (no unit), then a fresh pair for units 1-3
    assert sorted(s["unit"] for s in starts if s["unit"] is not None) == [1, 1, 2, 2, 3, 3]
    pids = [pid for r in _records(out, "server") for pid in r["pids"]]
    assert pids and not any(process_alive(pid) for pid in pids)


def test_the_records_hold_what_a_dry_run_needs(session, capsys):
    out, _ = session
    blocks = [b for b in _records(out, "comparison_block") if not b["warmup"]]
    assert [b["unit"] for b in blocks] == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert all(b["wall_s"] > 0 for b in blocks)
    assert compare_plan([str(out), "--budget", "5m"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].startswith("plan for 5 min of budget") and table[2].startswith("  smol-nospec/tiny: ")
