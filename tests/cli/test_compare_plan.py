"""``python -m pytest_llmbench compare-plan``: the plan table from a previous session's records (the H200
A/A session committed under experiments/data/compare), and errors that name the folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pytest_llmbench import __main__ as entry
from pytest_llmbench.cli.compare_plan import main

ROOT = Path(__file__).resolve().parents[2]
H200_AA = ROOT / "experiments/data/compare/compare_h200/campaign10/sessions-30/r37-aa-31"


def test_registered():
    assert entry.COMMANDS["compare-plan"][0] == "compare_plan"


def test_the_table_from_recorded_starts_and_rounds(capsys):
    """That session started llama.cpp in ~0.7 s: the own plan for 3% fits 20 minutes with short units."""
    assert main([str(H200_AA), "--budget", "20m"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "plan for 20 min of budget (each scenario's own detect):"
    assert out[2].startswith("  gpu-smol-nospec/chat-1u: ") and "detects >= 3%" in out[2]


def test_a_slow_start_buys_long_units_and_a_larger_blind_spot(capsys):
    assert main([str(H200_AA), "--budget", "20m", "--start-s", "60"]) == 0
    line = capsys.readouterr().out.splitlines()[2]
    units, rounds = (int(w) for w in line.split(": ", 1)[1].split(" rounds")[0].split(" units of "))
    assert rounds >= 6 and units >= 4 and "detects >= 3%" not in line


def test_a_folder_without_comparison_records_is_named(tmp_path, capsys):
    (tmp_path / "results.jsonl").write_text(json.dumps({"record": "scenario"}) + "\n")
    assert main([str(tmp_path), "--budget", "20m"]) == 1
    assert f"compare-plan: {tmp_path}: dry run: no comparison_block records" in capsys.readouterr().err


def test_a_bad_line_names_the_file(tmp_path, capsys):
    shutil.copy(H200_AA / "results.jsonl", tmp_path / "results.jsonl")
    with (tmp_path / "results.jsonl").open("a") as f:
        f.write("{not json\n")
    assert main([str(tmp_path), "--budget", "20m"]) == 1
    assert "results.jsonl" in capsys.readouterr().err


def test_not_a_folder(tmp_path, capsys):
    assert main([str(tmp_path / "missing"), "--budget", "1h"]) == 1
    assert "is not a results folder" in capsys.readouterr().err


def test_the_dry_run_prices_every_placement_at_big_model_starts(capsys):
    """Issue 57: compare-plan offers the placements a runner has (a TP=2 config that cannot share its GPUs
    on an 8-GPU runner), at 60/180/600-s starts, from the recorded round and noise; the cheapest is marked."""
    assert main([str(H200_AA), "--budget", "20m", "--placements", "2/8", "--starts", "60,600"]) == 0
    out = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(out) if "placements to 95% power at 3%:" in line]
    assert len(heads) == 2 and "start 60 s per arm" in out[heads[0]] and "start 600 s per arm" in out[heads[1]]
    block = out[heads[0] + 1 : heads[1]]
    assert block[0] == "  shared: not here (both arms do not fit on one arm's GPUs)"
    assert [line[2:].split(":")[0] for line in block] == [
        "shared",
        "per-block",
        "disjoint-interleaved",
        "disjoint-parallel",
    ]
    chosen = [line for line in block if line.startswith("* ")]
    assert len(chosen) == 1 and chosen[0].startswith("* disjoint-")


def test_a_bad_placements_spec_is_named(capsys):
    assert main([str(H200_AA), "--budget", "20m", "--placements", "2/1"]) == 1
    assert "--placements '2/1'" in capsys.readouterr().err
