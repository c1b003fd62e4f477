"""``python -m pytest_llmbench nightly`` as a user runs it, against the real llama-server (SmolLM2-135M): two
nights of the same build against a pinned reference (binary folders, subprocess launcher) into a folder store,
then the store's layout and ``history`` over it read back. Small: 16-token prompts, 8-token answers, ≤ 4 rounds."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _experiment():
    """experiments/bisect/bisect_cpu.py: its bench folder and its build folders (scripts that exec llama-server)."""
    spec = importlib.util.spec_from_file_location("bisect_cpu", ROOT / "experiments" / "bisect" / "bisect_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_nights_of_the_nightly_command_land_in_a_folder_store(tmp_path):
    exp = _experiment()
    work = tmp_path / "work"
    exp.prepare(work)
    bench = work / "test_bench.py"
    bench.write_text(exp.BENCH.replace("input_len=64, output_len=24,", "input_len=16, output_len=8,"))
    ref, cand = exp.make_builds(tmp_path / "builds", 2, 99, None, exp.SLOW_ARGS)
    store = tmp_path / "store"
    for night in ("nightly-01", "nightly-02"):
        cmd = [sys.executable, "-m", "pytest_llmbench", "nightly", "--reference", f"bin:{ref}", "--candidate",
               f"bin:{cand}", "--store", str(store), "--budget", "8", "--night", night, "--out", str(tmp_path / night),
               "--", "test_bench.py", "--llmbench-configs", "configs.yaml", "--llmbench-block-prompts", "1",
               "--llmbench-max-rounds", "4"]  # fmt: skip
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=240)
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    nights = sorted((store / "nights").iterdir())
    assert [n.name.split("-", 1)[1].rsplit("-", 1)[0] for n in nights] == ["nightly-01", "nightly-02"]
    for n in nights:
        meta = json.loads((n / "night.json").read_text())
        assert meta and (n / "results.jsonl").is_file()
        assert any(json.loads(x).get("record") == "comparison" for x in (n / "results.jsonl").read_text().splitlines())
    assert list((store / "pins").glob("*.json"))
    out = tmp_path / "hist"
    from pytest_llmbench.cli import history

    assert history.main([str(store), "--out", str(out), "--no-html", "--no-step-summary"]) == 0
    assert "2 nights (" in (md := (out / "history.md").read_text()) and "NOT JUDGED" in md
