"""Reading a results folder: one clear error naming the path when it is not one."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.records.folder import ResultsFolderError, read_folder

DATA = Path(__file__).parents[1] / "report" / "data" / "cpu-run-a"


def test_reads_every_kind_and_resources() -> None:
    folder = read_folder(DATA)
    kinds = {r["record"] for r in folder.records}
    assert {"server", "scenario", "verdict", "facts"} <= kinds
    assert folder.configs and set(folder.resources) <= set(folder.configs)
    statuses = [v["status"] for v in folder.verdicts()]
    order = ["REGRESSED", "improved", "new", "pass"]
    assert statuses == sorted(statuses, key=order.index)


def test_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ResultsFolderError, match=f"{tmp_path / 'nope'}: not a folder"):
        read_folder(tmp_path / "nope")


def test_no_results_file(tmp_path: Path) -> None:
    with pytest.raises(ResultsFolderError, match=r"no results\*.jsonl here"):
        read_folder(tmp_path)


def test_bad_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text('{"record": "server"}\n{oops\n')
    with pytest.raises(ResultsFolderError, match=r"results.jsonl:2: not valid JSON"):
        read_folder(tmp_path)


def test_bad_resources_json_named(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text('{"record": "server", "config": "c"}\n')
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "resources.json").write_text("{")
    with pytest.raises(ResultsFolderError, match=r"c/resources.json: not valid JSON"):
        read_folder(tmp_path)
