"""A comparison session beside a busy neighbour: every block record says so, and the terminal names it.

Real llama-servers (SmolLM2, cpu.yaml at a 4096-token context) and a real CPU-bound process started beside
the session, outside pytest's process tree (reparented to init), so the host-load accounting sees it as
another process, not as this run's own.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmbench import host_load
from pytest_llmbench.engines.llamacpp import llamacpp_binary

from ..conftest import process_alive, short_context

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

CPU_YAML = short_context()
NEIGHBOUR = "busy-neighbour"  # its command name in /proc (a symlink to python under this name)

BENCH = """
import pytest
from pytest_llmbench import Scenario

SC = Scenario("tiny", dataset="random", input_len=16, output_len=24, num_prompts=2, concurrency=1, warmup=1,
              seed=1, scrape_interval_s=0.2)

@pytest.mark.llm_configs("nospec")
def test_serving(llm_server, bench):
    result = bench.run(SC)
    bench.check("median_tpot_ms", result.metrics["median_tpot_ms"])
"""


def _records(out: Path, kind: str) -> list[dict]:
    rows = [json.loads(line) for f in sorted(out.glob("results*.jsonl")) for line in f.read_text().splitlines()]
    return [r for r in rows if r.get("record") == kind]


@pytest.fixture
def neighbour(tmp_path: Path):
    """A busy loop on one core, a child of init rather than of pytest (a shell starts it and exits)."""
    exe = tmp_path / NEIGHBOUR
    exe.symlink_to(sys.executable)
    line = f"{shlex.quote(str(exe))} -c 'while True: pass' >/dev/null 2>&1 & echo $!"
    pid = int(subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True).stdout)
    yield pid
    os.kill(pid, signal.SIGKILL)


def test_busy_neighbour_is_named_in_every_block_and_the_terminal(pytester: pytest.Pytester, neighbour: int):
    folder = shlex.quote(str(llamacpp_binary().parent))
    pytester.makepyfile(test_bench=BENCH)
    # the servers on one thread: a two-thread llama-server beside a busy core stalls at every thread barrier
    # (blocks of 2 short prompts took 14-74 s, the test 4+ min); the host load is judged, not the speed
    shared = '-t, "2"'
    assert shared in CPU_YAML.read_text(), CPU_YAML
    one_thread = pytester.path / "cpu-1-thread.yaml"
    one_thread.write_text(CPU_YAML.read_text().replace(shared, '-t, "1"'))
    result = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        f"--llmbench-configs={one_thread}",
        "--results-dir",
        "out",
        "-k",
        "smol-nospec",
        "--llmbench-reference-bin",
        folder,
        "--llmbench-candidate-bin",
        folder,
        "--llmbench-max-rounds",
        "4",
    )
    assert process_alive(neighbour)
    out = pytester.path / "out"
    blocks = _records(out, "comparison_block")
    assert len(blocks) >= 4, result.stdout.str()
    for b in blocks:  # each block's own window: the neighbour ran through all of them
        load = b["host_load"]
        assert load is not None and load["others"] >= host_load.OTHERS_MIN and load["contended"], b
    # the top three others: on a host shared with other sessions the neighbour is not always among them
    assert any(NEIGHBOUR in [name for name, _ in b["host_load"]["top"]] for b in blocks), blocks
    for b in blocks:  # the server's own /metrics over the block, in the vocabulary: llama-server generated tokens
        summary = b["telemetry"]["summary"]
        assert summary["generated_tokens_total"] >= 2 * 24 - 2 and summary["generated_tokens"] > 0, b["telemetry"]
        assert b["telemetry"]["errors"] == 0 and len(b["telemetry"]["samples"]) >= 2
    result.stdout.fnmatch_lines(["*smol-nospec tiny round * host busy: other processes used *"])
