"""``python -m pytest_llmbench nightly`` as a user runs it, against the real llama-server (SmolLM2-135M): two
nights of the same build against a pinned reference (binary folders, subprocess launcher) into a folder store,
then the store's layout and ``history`` over it read back. Small: 16-token prompts, 8-token answers, ≤ 4 rounds."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import process_alive

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


def _wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"waited {timeout_s:g} s for {what}"
        time.sleep(0.2)


def _blocks(folder: Path) -> int:
    return sum(line.count('"record": "comparison_block"') for f in folder.glob("results*.jsonl") for line in f.open())


def test_sigterm_to_the_nightly_command_alone_stops_its_session_and_stores_no_half_night(tmp_path):
    """A CI cancel or a pod's stop signals the nightly process only: before the fix its pytest session ran on,
    servers and all, after the parent had died (and died with the pod, its containers left)."""
    exp = _experiment()
    work = tmp_path / "work"
    exp.prepare(work)
    (work / "test_bench.py").write_text(
        exp.BENCH.replace("input_len=64, output_len=24,", "input_len=16, output_len=8,")
    )
    ref, cand = exp.make_builds(tmp_path / "builds", 2, 99, None, "")
    store, out = tmp_path / "store", tmp_path / "night"
    cmd = [sys.executable, "-m", "pytest_llmbench", "nightly", "--reference", f"bin:{ref}", "--candidate",
           f"bin:{cand}", "--store", str(store), "--budget", "600", "--night", "nightly-01", "--out", str(out),
           "--", "test_bench.py", "--llmbench-configs", "configs.yaml", "--llmbench-block-prompts", "1",
           "--llmbench-max-rounds", "200"]  # fmt: skip
    log = (tmp_path / "nightly.out").open("w")
    proc = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(lambda: _blocks(out / "night") >= 2 or proc.poll() is not None, 180, "two comparison blocks")
        assert proc.poll() is None, (tmp_path / "nightly.out").read_text()[-3000:]
        os.kill(proc.pid, signal.SIGTERM)  # the parent alone, as a pod's stop or `kill PID` sends it
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    text = (tmp_path / "nightly.out").read_text()
    assert rc == 143, text[-3000:]
    assert "llmbench nightly: INTERRUPTED (SIGTERM) — the night was not stored" in text, text[-3000:]
    assert not list(store.glob("nights/*/night.json")), "a half-judged night reached the store"
    session_log = (out / "session.log").read_text()
    assert "SIGTERM" in session_log, session_log[-3000:]  # the session was told, and said so in its summary
    pids = [p for f in (out / "night").glob("results*.jsonl") for r in map(json.loads, f.open())
            if r.get("record") == "server" for p in r["pids"]]  # fmt: skip
    assert pids, "the session recorded no server start"
    _wait_for(lambda: not any(process_alive(p) for p in pids), 10, "the servers to be gone")
    assert "INTERRUPTED (SIGTERM)" in (out / "nightly.md").read_text()
