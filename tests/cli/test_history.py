"""``python -m pytest_llmbench history``: the outputs, and the exit status a nightly job gates on, on the
campaign's real nights (tests/history/data)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

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


def _pinned_night(root: Path, n: int, candidate: float, reference: float, pin: str) -> str:
    """A night as a pinned-reference comparison writes it: the two arms' server records and one comparison."""
    folder = root / f"night-{n:02d}"
    folder.mkdir()
    time = f"2026-12-{n:02d}T02:00:00+00:00"
    records = [
        {"record": "server", "config": "c.reference", "role": "reference", "build": {"build": pin}},
        {"record": "server", "config": "c", "role": "candidate", "build": {"build": f"nightly-{n}"}},
        {
            "record": "comparison",
            "config": "c",
            "test_key": "t.py::test[s]",
            "metric": "output_throughput",
            "reference": reference,
            "candidate": candidate,
            "ratio": candidate / reference,
            "se": 0.005,
            "kind": "ratio",
            "verdict": "equivalent",
            "higher_is_better": True,
        },
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps({"time": time, **r}) + "\n" for r in records))
    return str(folder)


def test_a_step_in_the_ratio_to_the_pinned_reference_fails_and_a_re_pin_does_not(tmp_path: Path) -> None:
    """Tonight's build at 100 tok/s, pinned pin-1 at 100; from night 9 a faster pin-2 (111) is the reference
    (a re-pin: every ratio drops to ×0.90 at once); from night 13 the build loses 5.6%. The loss is the one
    change point of the ratio series, naming both builds; the re-pin is listed, never gated."""
    wiggle = [1.0, 1.004, 0.996, 1.002]
    arms = [(100.0, 100.0, "pin-1")] * 8 + [(100.0, 111.1, "pin-2")] * 4 + [(94.4, 111.1, "pin-2")] * 4
    nights = [
        _pinned_night(tmp_path, n, cand * wiggle[n % 4], ref, pin) for n, (cand, ref, pin) in enumerate(arms, start=1)
    ]
    out = tmp_path / "out"
    assert history.main([*nights, "--out", str(out), *GATE]) == 1
    records = [json.loads(line) for line in (out / "change_points.jsonl").read_text().splitlines()]
    [ratio] = [r for r in records if r["kind"] == "ratio"]
    assert (ratio["first_night"], ratio["reference"], ratio["new"], ratio["worse"]) == ("night-13", "pin-2", True, True)
    assert (ratio["good_build"], ratio["bad_build"]) == ("nightly-12", "nightly-13")
    assert all(r["first_night"] == "night-13" for r in records)  # the candidate's own values: the same night
    assert "- c: night-09 (pin-1 → pin-2)" in (out / "history.md").read_text()
    assert history.main([*nights[:12], "--out", str(tmp_path / "o2"), *GATE]) == 0  # the re-pin alone


def _synthetic_nights(root: Path, values: list[float]) -> list[str]:
    """One results folder per night: a server record (its build) and the stored gate's verdict."""
    out = []
    for i, v in enumerate(values):
        folder = root / f"night-{i + 1:02d}"
        folder.mkdir(parents=True)
        t = f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00"
        recs = [
            {"record": "server", "config": "smol", "time": t, "server_args": ["-t", "2"],
             "server_info": {"build_info": f"b{1000 + i}"}, "origin": {"profile": "cpu-x"}},
            {"record": "verdict", "config": "smol", "test_key": "b.py::test_serving[chat]",
             "metric": "output_throughput", "observed": v, "status": "pass", "direction": "higher", "time": t},
        ]  # fmt: skip
        (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        out.append(str(folder))
    return out


def _quiet(n: int) -> list[float]:
    import random

    rng = random.Random(5)
    return [100.0 * math.exp(rng.gauss(0.0, 0.01)) for _ in range(n)]


def test_a_halving_at_the_last_night_fails_the_gate_and_is_new_only_once(tmp_path: Path) -> None:
    """The audit's case: a halving at night 60 of 60 was never cut (min_size 2), so --fail-on-new could not fail."""
    gate = ["--last", "1", "--fail-on-new", "--no-html", "--no-step-summary"]
    tonight = _synthetic_nights(tmp_path / "a", [*_quiet(59), 50.0])
    assert history.main([*tonight, "--out", str(tmp_path / "o1"), *gate]) == 1
    # the night after, the same change is reported again but is not new: first reported means once
    later = _synthetic_nights(tmp_path / "b", [*_quiet(59), 50.0, 50.2, 49.9])
    assert history.main([*later, "--out", str(tmp_path / "o2"), *gate]) == 0
    assert "night-60" in (tmp_path / "o2" / "history.md").read_text()


def test_last_below_one_is_refused_by_name(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        history.main([*_nights(8), "--out", str(tmp_path), "--last", "-1"])
    assert e.value.code == 2
    assert "--last" in (err := capsys.readouterr().err) and "-1 nights" in err


def test_two_nights_are_not_judged_never_green(tmp_path: Path) -> None:
    assert history.main([*_nights(2), "--out", str(tmp_path), "--no-html", "--no-step-summary"]) == 0
    md = (tmp_path / "history.md").read_text()
    assert md.startswith("## llmbench history: ⚪ NOT JUDGED (") and "of 6 nights)" in md and "✅" not in md
