"""``python -m pytest_llmbench merge``: the command line over report.merge and gate.merge."""

from __future__ import annotations

import shutil

from pytest_llmbench.__main__ import main

from ..gate.test_merge import entry, write
from ..report.test_merge import shard_folder


def test_merge_results_prints_each_shard_and_writes_the_folder(tmp_path, capsys):
    a = shard_folder(tmp_path / "s1", "1/2", ["alpha"])
    b = shard_folder(tmp_path / "s2", "2/2", ["beta"])
    assert main(["merge", str(tmp_path / "out"), str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert f"{a}: 4 records, shard 1/2: alpha" in out and f"{b}: 4 records, shard 2/2: beta" in out
    assert (tmp_path / "out" / "results.jsonl").is_file()


def test_merge_results_overlap_exits_1_naming_the_config(tmp_path, capsys):
    a = shard_folder(tmp_path / "s1", "1/2", ["alpha"])
    b = shard_folder(tmp_path / "s2", "2/2", ["alpha"])
    assert main(["merge", str(tmp_path / "out"), str(a), str(b)]) == 1
    assert "merge: config 'alpha' is in both" in capsys.readouterr().err


def test_merge_warns_about_a_missing_shard(tmp_path, capsys):
    a = shard_folder(tmp_path / "s1", "1/2", ["alpha"])
    assert main(["merge", str(tmp_path / "out"), str(a)]) == 0
    assert "no results from shard(s) 2/2" in capsys.readouterr().err


def test_merge_baselines_lists_changes_and_refuses_conflicts(tmp_path, capsys):
    base = tmp_path / "baselines"
    write(base, "alpha", {("cpu", "t::a", "tput"): entry(1)})
    s1 = shutil.copytree(base, tmp_path / "s1")
    s2 = shutil.copytree(base, tmp_path / "s2")
    write(s1, "alpha", {("cpu", "t::a", "tput"): entry(2)})
    assert main(["merge", "--baselines", str(base), str(s1), str(s2)]) == 0
    assert "alpha.yaml: runners › cpu › t::a › tput" in capsys.readouterr().out
    write(s2, "alpha", {("cpu", "t::a", "tput"): entry(3)})
    write(s1, "alpha", {("cpu", "t::a", "tput"): entry(4)})
    assert main(["merge", "--baselines", str(tmp_path / "new"), str(s1), str(s2), "--base", str(s1)]) == 0
    assert main(["merge", "--baselines", str(base), str(s1), str(s2)]) == 1
    assert "changed differently" in capsys.readouterr().err


def test_base_without_baselines_is_a_usage_error(tmp_path, capsys):
    assert main(["merge", str(tmp_path / "o"), str(tmp_path), "--base", str(tmp_path)]) == 2
    assert "--base only applies with --baselines" in capsys.readouterr().err
