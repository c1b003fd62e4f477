"""``python -m pytest_llmbench history``: the outputs, and the exit status a nightly job gates on, on the
campaign's real nights (tests/history/data)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_llmbench.cli import history

DATA = Path(__file__).parents[1] / "history" / "data"
GATE = ["--last", "5", "--fail-on-new", "--no-html", "--no-step-summary"]


def _nights(upto: int) -> list[str]:
    return [str(DATA / f"night-{n:02d}") for n in range(1, upto + 1)]


def test_a_new_change_for_the_worse_fails_with_fail_on_new(tmp_path: Path, capsys) -> None:
    args = [*_nights(15), "--out", str(tmp_path), "--last", "5", "--no-html", "--no-step-summary"]
    assert history.main(args) == 0  # reported, not gated
    assert history.main([*args, "--fail-on-new"]) == 1
    out = capsys.readouterr().out
    assert "new change point(s) for the worse in the last 5 night(s)" in out and "night-11" in out
    records = [json.loads(line) for line in (tmp_path / "change_points.jsonl").read_text().splitlines()]
    assert records and all(r["new"] and r["worse"] and r["first_night"] == "night-11" for r in records)


def test_the_revert_is_not_a_failure(tmp_path: Path) -> None:
    """All nights, last 1: the newest change (night 21) is the way back up; the nights since are quiet."""
    args = [str(DATA / "night-*"), "--out", str(tmp_path), "--last", "1", "--fail-on-new", "--no-step-summary"]
    assert history.main([*args, "--no-html"]) == 0
    md = (tmp_path / "history.md").read_text()
    assert "no new change point for the worse" in md and "night-21" in md


def test_step_summary_gets_the_markdown(tmp_path: Path, monkeypatch) -> None:
    summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert history.main([*_nights(15), "--out", str(tmp_path / "o"), "--last", "5", "--no-html"]) == 0
    assert summary.read_text().startswith("## llmbench history: ❌")


def test_bad_input_is_named_with_status_2(tmp_path: Path, capsys) -> None:
    assert history.main([str(tmp_path / "nope-*"), "--out", str(tmp_path)]) == 2
    assert "nope-*: no results folder matches" in capsys.readouterr().err


def test_the_module_entry_point_runs_it(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest_llmbench", "history", *_nights(15), "--out", str(tmp_path), *GATE],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
