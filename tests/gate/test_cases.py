"""Per-case sidecars: layout, round trip, one-line diffs, and errors that name the file and line."""

from __future__ import annotations

import json

import pytest

from pytest_llmbench.gate import cases as C
from pytest_llmbench.gate.store import BaselineStore

BASE = "baselines/smol-ngram.yaml"
KEY = "benches/test_quality_cpu.py::test_accept_length[mt-bench]"


def test_sidecar_lives_beside_the_config_file_with_safe_names(tmp_path):
    p = C.sidecar_path(tmp_path / BASE, None, KEY, "accept_length")
    assert p.parent.parent == tmp_path / "baselines/smol-ngram.cases/shared"
    assert p.name == "accept_length.jsonl"
    assert all(ch.isalnum() or ch in "._-" for ch in p.parent.name)
    hw = C.sidecar_path(tmp_path / BASE, "cpu-amd-epyc-2c", "t", "ttft")
    assert hw.relative_to(tmp_path).as_posix() == "baselines/smol-ngram.cases/runners/cpu-amd-epyc-2c/t/ttft.jsonl"


def test_names_that_differ_only_in_unsafe_characters_get_different_files(tmp_path):
    a = C.sidecar_path(tmp_path / BASE, None, "t[a/b]", "m")
    b = C.sidecar_path(tmp_path / BASE, None, "t[a_b]", "m")
    c = C.sidecar_path(tmp_path / BASE, None, "t_a_b_", "m")
    assert len({a, b, c}) == 3
    assert C.safe_name("..") != ".." and C.safe_name("") != ""


def test_round_trip_is_sorted_one_case_per_line(tmp_path):
    p = tmp_path / "x.jsonl"
    C.write_cases(p, KEY, "accept_length", None, {"b#0@s1": 2.5, "a#1@s1": 3.0, "a#0@s1": 1.0 / 3})
    lines = p.read_text().splitlines()
    assert json.loads(lines[0]) == {"version": 1, "test_key": KEY, "metric": "accept_length", "runner": None, "n": 3}
    assert [json.loads(x)["case"] for x in lines[1:]] == ["a#0@s1", "a#1@s1", "b#0@s1"]
    assert C.read_cases(p, test_key=KEY, metric="accept_length") == {"a#0@s1": 0.333333, "a#1@s1": 3.0, "b#0@s1": 2.5}


def test_a_changed_case_is_a_one_line_diff():
    before = C.dumps_cases(KEY, "m", None, {f"c{i:03d}": 1 for i in range(50)}).splitlines()
    after = C.dumps_cases(KEY, "m", None, {**{f"c{i:03d}": 1 for i in range(50)}, "c017": 0}).splitlines()
    assert sum(x != y for x, y in zip(before, after, strict=True)) == 1


def test_missing_file_is_none(tmp_path):
    assert C.read_cases(tmp_path / "nope.jsonl") is None


@pytest.mark.parametrize(
    "lines, line, words",
    [
        (
            [
                '{"version": 1, "test_key": "t", "metric": "m"}',
                '{"case": "a", "value": 1}',
                '{"case": "b", "value": oops}',
            ],
            3,
            "invalid JSON",
        ),
        (['{"version": 1, "test_key": "t", "metric": "m"}', '{"case": "a", "value": NaN}'], 2, "finite number"),
        (
            [
                '{"version": 1, "test_key": "t", "metric": "m"}',
                '{"case": "a", "value": 1}',
                '{"case": "a", "value": 0}',
            ],
            3,
            "appears twice",
        ),
        (['{"version": 1, "test_key": "t", "metric": "m"}', '{"case": "a", "value": "1"}'], 2, "finite number"),
        (['{"version": 1, "test_key": "t", "metric": "m"}', '{"id": "a", "value": 1}'], 2, "expected"),
        (['{"case": "a", "value": 1}'], 1, "header"),
        (['{"version": 1, "test_key": "other", "metric": "m"}', '{"case": "a", "value": 1}'], 1, "test_key"),
        (['{"version": 1, "test_key": "t", "metric": "m", "n": 2}', '{"case": "a", "value": 1}'], 1, "n=2"),
    ],
)
def test_corrupt_sidecar_names_file_and_line(tmp_path, lines, line, words):
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(C.CasesFileError) as e:
        C.read_cases(p, test_key="t", metric="m")
    assert e.value.line == line
    assert f"{p}:{line}:" in str(e.value) and words in str(e.value)


def test_corrupt_sidecar_is_never_overwritten(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text("garbage\n")
    with pytest.raises(C.CasesFileError):
        C.write_cases(p, "t", "m", None, {"a": 1})
    assert p.read_text() == "garbage\n"


@pytest.mark.parametrize(
    "bad, err",
    [
        ({}, ValueError),
        ({"a": float("nan")}, ValueError),
        ({"": 1}, TypeError),
        ({1: 1.0}, TypeError),
        ({"a": "x"}, ValueError),
        ([1, 2], TypeError),
    ],
)
def test_clean_cases_rejects_bad_input(bad, err):
    with pytest.raises(err):
        C.clean_cases(bad)


def test_clean_cases_accepts_bools_as_pass_fail():
    assert C.clean_cases({"b": True, "a": False}) == {"a": 0.0, "b": 1.0}


def test_save_then_the_store_reads_them_and_an_entry_without_cases_drops_them(tmp_path):
    store = BaselineStore(tmp_path / "baselines")
    f = store.path_for("smol-ngram")
    assert store.cases("smol-ngram", None, KEY, "accept_length") is None  # no sidecar yet
    C.save(f, None, KEY, "accept_length", {"p1": 1.0, "p2": 3.0})
    assert store.cases("smol-ngram", None, KEY, "accept_length") == {"p1": 1.0, "p2": 3.0}
    assert store.cases("smol-ngram", "cpu-x", KEY, "accept_length") is None  # another section
    C.save(f, None, KEY, "accept_length", None)  # written without cases: the stale sidecar goes
    assert store.cases("smol-ngram", None, KEY, "accept_length") is None
    assert not (tmp_path / "baselines/smol-ngram.cases/shared").exists()
