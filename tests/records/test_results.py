"""results.jsonl: the ResultsWriter sink, the plain record builders, and reading a folder back."""

import json
from types import SimpleNamespace

import pytest

from pytest_llmbench import load_results
from pytest_llmbench.records.results import ResultsWriter, end_of_test_line, iter_records, scenario_line
from pytest_llmbench.sink import plain
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult

CFG = SimpleNamespace(engine="llamacpp", model=SimpleNamespace(describe=lambda: "m.gguf"), args=("-c", "1"))


def test_scenario_lines_land_in_results_jsonl_and_load_into_pandas(tmp_path):
    writer = ResultsWriter(tmp_path)
    for name, rate in (("a", 10.0), ("b", float("nan"))):
        line = scenario_line(ScenarioResult(Scenario(name), [], {"output_throughput": rate, "completed": 3}), CFG)
        writer.pytest_llmbench_record(
            {"config": "c1", "test": "t.py::test[c1]", "test_key": "t.py::test", **plain(line)}
        )
    df = load_results(tmp_path)
    assert list(df["scenario"]) == ["a", "b"] and df["output_throughput"].iloc[0] == 10.0
    assert df["output_throughput"].isna().iloc[1]  # NaN is written as null, read back as missing
    assert list(df["config"]) == ["c1", "c1"] and list(df["engine"]) == ["llamacpp", "llamacpp"]


def test_the_writer_stamps_origin_and_is_unwritable_under_a_file(tmp_path):
    writer = ResultsWriter(tmp_path / "r", worker="gw1")
    writer.origin = {"profile": "cpu", "host": "h", "shard": None}
    writer.pytest_llmbench_record(
        {"config": None, "test": "t.py::t", "test_key": "t.py::t", **end_of_test_line({"x": 1})}
    )
    [line] = (tmp_path / "r" / "results.gw1.jsonl").read_text().splitlines()
    assert json.loads(line)["origin"] == {"profile": "cpu", "host": "h", "shard": None}
    (tmp_path / "f").write_text("")
    assert "is a file, not a folder" in ResultsWriter(tmp_path / "f" / "r").unwritable()


def test_end_of_test_line_leaves_out_long_sample_lists():
    line = end_of_test_line({"short": [1.0, 2.0], "long": list(range(1001)), "n": 3})
    assert line["record"] == "test" and set(line["measurements"]) == {"short", "n"}


def test_iter_records_names_an_empty_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results"):
        list(iter_records(tmp_path))
