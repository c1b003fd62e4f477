"""``python -m pytest_llmbench check-config``: every bad file reported, exit codes, the schema printed.
The malformed configs themselves are in tests/test_config_schema.py (loader, check-config and schema)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_llmbench.cli.check_config import builtin_schema_text
from pytest_llmbench.cli.check_config import main as check_config

ROOT = Path(__file__).resolve().parents[2]


def test_check_config_reports_every_bad_file_and_still_exits_1(tmp_path, capsys):
    good = tmp_path / "good"
    good.mkdir()
    (good / "m.gguf").write_bytes(b"GGUF")
    (good / "ok.yaml").write_text("configs: [{name: ok, engine: llamacpp, model: m.gguf}]\n")
    (good / "x.yaml").write_text("configs: [{name: x, engine: llamacpp, model: m.gguf, gpus: many}]\n")
    (good / "y.yaml").write_text("configs: [{name: y, engine: llamacpp, model: m.gguf, colour: blue}]\n")
    assert check_config([str(good)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0] == f"{good / 'x.yaml'}: config 'x', key 'gpus': must be an integer, got str 'many'"
    assert lines[1].startswith(f"{good / 'y.yaml'}: config 'y', key 'colour': unknown key (allowed: ")


def test_check_config_names_a_missing_path_and_needs_one(tmp_path, capsys):
    assert check_config([str(tmp_path / "nope.yaml")]) == 1
    assert "nope.yaml: no such file or folder (from the command line)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        check_config([])
    assert e.value.code == 2


def test_check_config_runs_as_a_module_and_prints_the_schema():
    """``python -m pytest_llmbench check-config``, a separate process as CI runs it."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest_llmbench", "check-config", "--print-schema"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0 and json.loads(run.stdout) == json.loads(builtin_schema_text())


def test_check_config_checks_compare_pairs_across_files(tmp_path, capsys):
    """A ``compare:`` pair may name a config of another file; a name no file has is the one error."""
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    (tmp_path / "a.yaml").write_text("configs: [{name: ref, engine: llamacpp, model: m.gguf}]\n")
    (tmp_path / "b.yaml").write_text(
        "configs: [{name: cand, engine: llamacpp, model: m.gguf}]\ncompare: [{reference: ref, candidate: cand}]\n"
    )
    assert check_config([str(tmp_path)]) == 0
    assert capsys.readouterr().out == "check-config: OK, 2 configs in 2 file(s)\n"
    (tmp_path / "b.yaml").write_text(
        "configs: [{name: cand, engine: llamacpp, model: m.gguf}]\ncompare: [{reference: reff, candidate: cand}]\n"
    )
    assert check_config([str(tmp_path)]) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{tmp_path / 'b.yaml'}, key 'compare[0].reference': unknown config 'reff'")
