"""A real short CPU-suite run ends with report.html and summary.md (real llama-server + SmolLM2)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _timing_history(path: Path) -> None:
    """Six recorded starts of chat-1u's timing on this machine (no CPU timing is committed), so the history
    plot has something to draw."""
    from pytest_llmbench.gate.baselines import dumps, load
    from pytest_llmbench.gate.files import write_atomic
    from pytest_llmbench.gate.machine import fingerprint
    from pytest_llmbench.gate.runner import detect
    from pytest_llmbench.gate.types import BaselineEntry

    bf = load(path, "smol-nospec")
    machine = fingerprint(detect("cpu-amd-epyc-2c"))
    for metric, direction, value in (
        ("output_throughput", "higher", 100.0),
        ("median_ttft_ms", "lower", 150.0),
        ("median_tpot_ms", "lower", 10.0),
    ):
        history = tuple(value * (1 + d) for d in (-0.02, 0.01, 0.0, 0.03, -0.01, 0.02))
        bf.put(
            "cpu-amd-epyc-2c",
            "benches/test_serving_cpu.py::test_serving[chat-1u]",
            metric,
            BaselineEntry(
                value=history[-1],
                direction=direction,
                noise={"name": "History", "k": 3},
                history=history,
                provenance={"machine": machine},
            ),
        )
    write_atomic(path, dumps(bf))


def test_llmbench_report_after_a_real_run(tmp_path: Path) -> None:
    """One serving scenario on one config (about 15 s); the gate's verdict does not matter here."""
    results, baselines = tmp_path / "results", tmp_path / "baselines"
    shutil.copytree(ROOT / "baselines", baselines)  # the run must not touch the repository's files
    _timing_history(baselines / "smol-nospec.yaml")
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(tmp_path / "step.md")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "benches/test_serving_cpu.py",
            "-m",
            "cpu",
            "-k",
            "smol-nospec and chat-1u",
            "--results-dir",
            str(results),
            "--baselines-dir",
            str(baselines),
            "--llmbench-report",
            "--runner",
            "cpu-amd-epyc-2c",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"llmbench report: {results / 'report.html'}" in proc.stdout
    records = [json.loads(line) for line in (results / "results.jsonl").read_text().splitlines()]
    verdicts = [r for r in records if r["record"] == "verdict"]
    assert {v["metric"] for v in verdicts} == {"output_throughput", "median_ttft_ms", "median_tpot_ms"}
    page = (results / "report.html").read_text()
    table = page.split('id="verdicts-table"', 1)[1].split("</table>", 1)[0]
    assert len(re.findall(r"<tr class=", table)) == len(verdicts)
    assert {"plot-throughput", "plot-ttft-decode", "plot-history-smol-nospec"} <= set(
        re.findall(r'<figure id="([^"]+)"', page)
    )
    assert (tmp_path / "step.md").read_text() == (results / "summary.md").read_text()
