"""Baseline files: round trip, reviewable format, clear errors for bad files, atomic writes."""

from __future__ import annotations

import os

import pytest
import yaml

from pytest_llmbench.gate import baselines
from pytest_llmbench.gate.baselines import BaselineFile, BaselineFileError, dumps, load, round_sig, write_atomic
from pytest_llmbench.gate.entry import HISTORY_LEN, BaselineEntry

REL = {"name": "Relative", "frac": 0.04}


def sample(path):
    bf = BaselineFile(path, "cpu-nodraft")
    bf.put("cpu-amd-epyc-2c", "t.py::test_chat[1user]", "output_throughput",
           BaselineEntry(148.123456789, "higher", REL, se=1.23456789, history=(150.0, 148.123456789),
                         provenance={"date": "2026-01-02", "runner": "cpu-amd-epyc-2c"}))
    bf.put(None, "t.py::test_bfcl", "bfcl_passed",
           BaselineEntry(176, "higher", {"name": "Spread", "spread": 8}, n=205, history=(168.0, 174.0, 176.0)))
    return bf


def test_round_trip_is_stable(tmp_path):
    path = tmp_path / "cpu-nodraft.yaml"
    text = dumps(sample(path))
    write_atomic(path, text)
    again = load(path, "cpu-nodraft")
    assert dumps(again) == text
    assert again.get(None, "t.py::test_bfcl", "bfcl_passed").history == (168.0, 174.0, 176.0)
    assert again.get("cpu-amd-epyc-2c", "t.py::test_chat[1user]", "output_throughput").value == 148.123
    assert again.get("other-runner", "t.py::test_chat[1user]", "output_throughput") is None


def test_format_sorted_fixed_precision_inline_history(tmp_path):
    text = dumps(sample(tmp_path / "x.yaml"))
    assert "value: 148.123\n" in text and "se: 1.23457\n" in text
    assert "history: [168, 174, 176]" in text
    data = yaml.safe_load(text)
    assert list(data) == sorted(data)
    entry = data["runners"]["cpu-amd-epyc-2c"]["t.py::test_chat[1user]"]["output_throughput"]
    assert list(entry) == sorted(entry)


def test_history_is_truncated_to_the_last_accepted_values(tmp_path):
    bf = BaselineFile(tmp_path / "x.yaml", "c")
    bf.put(None, "t", "m", BaselineEntry(1.0, "higher", REL, history=tuple(float(i) for i in range(25))))
    hist = yaml.safe_load(dumps(bf))["shared"]["t"]["m"]["history"]
    assert hist == list(range(25 - HISTORY_LEN, 25))


@pytest.mark.parametrize(("x", "out"), [(148.123456789, 148.123), (176.0, 176), (0.000123456789, 0.000123457),
                                        (1234567.89, 1234570)])
def test_round_sig(x, out):
    assert round_sig(x) == out


@pytest.mark.parametrize(("text", "reason"), [
    ("shared: [", "invalid YAML"),
    ("- 1\n- 2\n", "expected a mapping at the top"),
    ("shared:\n  t:\n    m: {value: fast, direction: higher, noise: {name: Relative, frac: 0.1}}\n",
     "shared › t › m: 'value' must be a number"),
    ("shared:\n  t:\n    m: {value: 1, direction: up, noise: {name: Relative, frac: 0.1}}\n", "'direction'"),
    ("shared:\n  t:\n    m: {value: 1, direction: higher, noise: {name: Magic}}\n", "unknown noise model 'Magic'"),
    ("shared:\n  t:\n    m: {value: 1, direction: higher, noise: {name: Relative, frac: 0.1}, color: red}\n",
     "unknown key"),
    ("tests: {}\n", "unknown top-level key"),
    ("version: 7\n", "version 7"),
])
def test_corrupt_file_is_an_error_naming_the_file(tmp_path, text, reason):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(BaselineFileError) as exc:
        load(path, "cfg")
    assert str(path) in str(exc.value) and reason in str(exc.value)
    assert "never overwrites" in str(exc.value)


def test_missing_and_empty_files_are_empty_baselines(tmp_path):
    assert not load(tmp_path / "none.yaml", "none").exists
    (tmp_path / "empty.yaml").write_text("")
    assert list(load(tmp_path / "empty.yaml", "empty").keys()) == []


def test_atomic_write_leaves_the_old_file_when_replace_fails(tmp_path, monkeypatch):
    path = tmp_path / "cfg.yaml"
    path.write_text("old\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(baselines.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new\n")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["cfg.yaml"]  # no temp file left behind


def test_atomic_write_never_exposes_a_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "cfg.yaml"
    path.write_text("old\n")
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((open(src).read(), open(dst).read()))  # the target is still whole when the temp is done
        real_replace(src, dst)

    monkeypatch.setattr(baselines.os, "replace", spy)
    write_atomic(path, "new\n" * 1000)
    assert seen == [("new\n" * 1000, "old\n")]
    assert path.read_text() == "new\n" * 1000
