"""records/kinds.py and records/read.py: every kind declared, checked and stamped on write, read by version."""

from __future__ import annotations

import ast
import json
import typing
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

import pytest_llmbench
from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.records.kinds import KINDS, VERSION, RecordSchemaWarning, stamped
from pytest_llmbench.records.read import UPGRADES, NewerRecordWarning, of_kind, read_line, version_of
from pytest_llmbench.records.results import ResultsWriter, end_of_test_line, facts_line, iter_records, scenario_line
from pytest_llmbench.sink import plain
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult

SRC = Path(pytest_llmbench.__file__).parent
CFG = SimpleNamespace(engine="llamacpp", model=SimpleNamespace(describe=lambda: "m.gguf"), args=("-c", "1"))
STAMPS = {"config": "c1", "test": "t.py::test[c1]", "test_key": "t.py::test"}  # what Bench.emit adds


def kinds_written(root: Path) -> dict[str, str]:
    """{kind: where} for every ``{"record": "<kind>", …}`` literal under ``root``, and every kind named to
    compare/records.py's ``_head("<kind>", …)``, which builds the start of such a literal."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            kind = None
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "record" and isinstance(value, ast.Constant):
                        kind = value.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_head":
                if node.args and isinstance(node.args[0], ast.Constant):
                    kind = node.args[0].value
            if isinstance(kind, str):
                found.setdefault(kind, f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_every_kind_written_in_the_package_is_declared():
    written = kinds_written(SRC)
    assert {"scenario", "server", "verdict", "comparison_block", "comparison", "bisect_step"} <= set(written)
    undeclared = {k: where for k, where in written.items() if k not in KINDS}
    assert not undeclared, f"declare these kinds in records/kinds.py KINDS: {undeclared}"


def test_the_scan_finds_a_new_kind(tmp_path):
    """The check above can fail: a writer of an undeclared kind, in either form, is found."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "w.py").write_text(
        'def f(emit):\n    emit({"record": "brand_new", "x": 1})\n    return {**_head("also_new", 1)}\n'
    )
    assert kinds_written(tmp_path / "pkg") == {"brand_new": "pkg/w.py:2", "also_new": "pkg/w.py:3"}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_schema_names_its_own_kind(name):
    kind = KINDS[name]
    assert kind.version >= 1
    hints = typing.get_type_hints(kind.schema)
    assert typing.get_args(hints["record"]) == (name,)
    assert "record" in kind.schema.__required_keys__
    # NotRequired was seen (a string annotation would have made every field required)
    if name in ("server", "comparison", "scenario", "bisect_step"):
        assert kind.schema.__optional_keys__


def test_a_missing_required_field_warns_naming_kind_and_field_and_the_line_is_kept(tmp_path):
    writer = ResultsWriter(tmp_path)
    line = facts_line("c1", {"startup_s": 1.0})
    del line["time"]
    with pytest.warns(RecordSchemaWarning, match=r"a 'facts' record lacks its required field 'time': see FactsRecord"):
        writer.pytest_llmbench_record(plain(line))
    (kept,) = (json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines())
    assert kept["facts"] == {"startup_s": 1.0} and kept[VERSION] == 1  # what was measured is never lost
    with pytest.warns(RecordSchemaWarning, match=r"field 'config' \(and 'session_id', 'test', 'test_key'\): see Scen"):
        stamped(scenario_line(_result("a"), CFG))  # as built, before Bench.emit and the writer stamp it


def test_the_projects_own_tests_fail_on_a_writer_that_misses_a_field():
    """tests/conftest.py makes the warning an error here, so a bug in our own writer fails its test."""
    with pytest.raises(RecordSchemaWarning):
        stamped({"record": "facts", "config": "c1", "facts": {}})


def _result(name: str) -> ScenarioResult:
    return ScenarioResult(Scenario(name), [], {"output_throughput": 10.0, "completed": 3})


def test_the_writer_stamps_the_version_on_declared_kinds_only(tmp_path):
    writer = ResultsWriter(tmp_path)
    writer.pytest_llmbench_record({**STAMPS, **plain(scenario_line(_result("a"), CFG))})
    writer.pytest_llmbench_record({**STAMPS, **plain(end_of_test_line({"x": 1.0}))})
    writer.pytest_llmbench_record({**STAMPS, "record": "my_eval", "score": 0.5})  # a conftest's own kind
    scenario, test, mine = (json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines())
    assert scenario[VERSION] == KINDS["scenario"].version == 1 and test[VERSION] == KINDS["test"].version
    assert VERSION not in mine and mine["score"] == 0.5  # undeclared: passed through as given, unversioned
    assert scenario["session_id"] == writer.session_id


def _lines(path: Path, *records: dict) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path / "results.jsonl"


def test_a_line_without_a_version_reads_as_version_1(tmp_path):
    """What every folder written before versions has (tests/report/data, experiments/, users' stores)."""
    _lines(tmp_path, {"record": "scenario", "config": "c", "scenario": "a", "metrics": {"x": 1}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [rec] = read_folder(tmp_path).records
        old = read_folder(Path(__file__).parents[1] / "report" / "data" / "cpu-run-a").records
    assert version_of(rec) == 1 and rec["metrics"] == {"x": 1}
    assert old and all(version_of(r) == 1 for r in old) and not any(VERSION in r for r in old)
    assert version_of({"record": "scenario", VERSION: 3}) == 3


def test_a_newer_line_is_read_as_is_with_one_warning_naming_file_and_line(tmp_path):
    newer = KINDS["scenario"].version + 1
    path = _lines(
        tmp_path,
        {"record": "server", "config": "c"},
        {"record": "scenario", "config": "c", VERSION: newer, "metrics": {"x": 1}, "renamed": 2},
        {"record": "scenario", "config": "c", VERSION: newer, "metrics": {"x": 2}},
    )
    with pytest.warns(NewerRecordWarning) as seen:
        records = list(iter_records(tmp_path))
    assert [str(w.message).split(": ")[0] for w in seen] == [f"{path}:2"]  # one per file and kind, naming its line
    assert f"record_version {newer}, newer than the {newer - 1}" in str(seen[0].message)
    assert [r.get("renamed") for r in of_kind(records, "scenario")] == [2, None]  # as is, unknown fields kept


def test_an_older_line_goes_through_its_kinds_upgrade_steps(monkeypatch):
    """The seam for a changed kind: version 2 of "facts" renames a field; a version-1 line is brought up."""
    monkeypatch.setitem(KINDS, "facts", KINDS["facts"]._replace(version=2))
    monkeypatch.setitem(UPGRADES, ("facts", 1), lambda r: {**r, "facts": r.get("old_facts")})
    up = read_line({"record": "facts", "old_facts": {"a": 1}}, "results.jsonl:1")
    assert up["facts"] == {"a": 1} and up[VERSION] == 2
    now = {"record": "facts", "facts": {"b": 2}, VERSION: 2}
    assert read_line(now, "results.jsonl:2") is now
    other = {"record": "my_eval", VERSION: 7}
    assert read_line(other, "results.jsonl:3") is other  # not ours: never upgraded, never warned about


def test_of_kind_keeps_one_kind_in_order():
    records = [{"record": "server", "n": 0}, {"record": "scenario", "n": 1}, {"n": 2}, {"record": "scenario", "n": 3}]
    assert [r["n"] for r in of_kind(records, "scenario")] == [1, 3]
    assert of_kind(records, "bisect") == [] and of_kind(records, "my_eval") == []
