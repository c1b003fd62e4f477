"""Baseline files: round trip, reviewable format, clear errors for bad files, atomic writes."""

from __future__ import annotations

import pytest
import yaml

from pytest_llmbench.gate.baselines import BaselineFile, BaselineFileError, dumps, load, round_sig
from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.gate.types import HISTORY_LEN, BaselineEntry

REL = {"name": "Relative", "frac": 0.04}


def sample(path):
    bf = BaselineFile(path, "cpu-nodraft")
    bf.put(
        "cpu-amd-epyc-2c",
        "t.py::test_chat[1user]",
        "output_throughput",
        BaselineEntry(
            148.123456789,
            "higher",
            REL,
            se=1.23456789,
            history=(150.0, 148.123456789),
            provenance={"date": "2026-01-02", "runner": "cpu-amd-epyc-2c"},
        ),
    )
    bf.put(
        None,
        "t.py::test_bfcl",
        "bfcl_passed",
        BaselineEntry(176, "higher", {"name": "Spread", "spread": 8}, n=205, history=(168.0, 174.0, 176.0)),
    )
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


@pytest.mark.parametrize(
    ("x", "out"), [(148.123456789, 148.123), (176.0, 176), (0.000123456789, 0.000123457), (1234567.89, 1234570)]
)
def test_round_sig(x, out):
    assert round_sig(x) == out


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("shared: [", "invalid YAML"),
        ("- 1\n- 2\n", "expected a mapping at the top"),
        (
            "shared:\n  t:\n    m: {value: fast, direction: higher, noise: {name: Relative, frac: 0.1}}\n",
            "shared › t › m: 'value' must be a number",
        ),
        ("shared:\n  t:\n    m: {value: 1, direction: up, noise: {name: Relative, frac: 0.1}}\n", "'direction'"),
        ("shared:\n  t:\n    m: {value: 1, direction: higher, noise: {name: Magic}}\n", "unknown noise model 'Magic'"),
        (
            "shared:\n  t:\n    m: {value: 1, direction: higher, noise: {name: Relative, frac: 0.1}, color: red}\n",
            "unknown key",
        ),
        ("tests: {}\n", "unknown top-level key"),
        ("version: 7\n", "version 7"),
    ],
)
def test_corrupt_file_is_an_error_naming_the_file(tmp_path, text, reason):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(BaselineFileError) as exc:
        load(path, "cfg")
    assert str(path) in str(exc.value) and reason in str(exc.value)
    assert "never overwrites" in str(exc.value)


def test_missing_file_is_an_empty_baseline_and_an_empty_one_is_cut_short(tmp_path):
    """Issue 52: a 0-byte file (a full disk, a half-copied artifact) was "no baselines", every check new."""
    assert not load(tmp_path / "none.yaml", "none").exists
    (tmp_path / "empty.yaml").write_text("")
    with pytest.raises(BaselineFileError, match=r"empty\.yaml is unreadable: it is empty \(0 bytes\).*cut short"):
        load(tmp_path / "empty.yaml", "empty")


# --- issue 10 / issue 9: bad numbers, truncation, file mode ---------------------------------------------


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("se", "se: .nan", "'se' must be a finite number, found nan"),
        ("value", "value: .nan", "'value' must be a finite number, found nan"),
        ("se", "se: -0.1", "'se' must be >= 0, found -0.1"),
        ("spread", "spread: -2", "'spread' must be >= 0"),
        ("se", "se: abc", "'se' must be a number, found 'abc'"),
        ("history", "history: [1, .inf]", "'history' must be a list of finite numbers"),
        ("n", "n: 0", "'n' must be a whole number >= 1, found 0"),
    ],
)
def test_bad_numbers_are_an_error_naming_file_and_key(tmp_path, field, text, message):
    """Defect at 8fab55e: se: .nan / value: .nan loaded, the tolerance became NaN and every check passed."""
    path = tmp_path / "c.yaml"
    entry = {"value": "value: 3.4", "se": "se: 0.1", "spread": "spread: 1", "history": "history: [3.4]", "n": "n: 32"}
    entry[field] = text
    body = ", ".join(entry.values())
    path.write_text(
        f"shared:\n  t.py::test_a:\n    accept_length: {{{body}, direction: higher, noise: {{name: StdErr}}}}\n"
    )
    with pytest.raises(BaselineFileError) as e:
        load(path, "c")
    assert str(path) in str(e.value) and "shared › t.py::test_a › accept_length" in str(e.value)
    assert message in str(e.value)


def test_file_cut_at_a_line_boundary_is_an_error_not_fewer_entries(tmp_path):
    """Issue 9: a file cut short loaded 8 of its 18 entries silently; the writer's end line catches it."""
    path = tmp_path / "cpu-nodraft.yaml"
    write_atomic(path, dumps(sample(path)))
    lines = path.read_text().splitlines(keepends=True)
    for cut in (len(lines) - 1, len(lines) - 2, len(lines) // 2):
        path.write_text("".join(lines[:cut]))
        with pytest.raises(BaselineFileError, match="cut short"):
            load(path, "cpu-nodraft")


def test_hand_edited_value_still_loads_and_a_wrong_count_says_how_to_fix_it(tmp_path):
    path = tmp_path / "cpu-nodraft.yaml"
    write_atomic(path, dumps(sample(path)))
    path.write_text(path.read_text().replace("value: 176", "value: 175"))
    assert load(path, "cpu-nodraft").get(None, "t.py::test_bfcl", "bfcl_passed").value == 175
    path.write_text(path.read_text().replace("# end: 2 entries", "# end: 3 entries"))
    with pytest.raises(BaselineFileError, match=r"holds 2 entries but its end line says 3.*correct the number"):
        load(path, "cpu-nodraft")


def test_version_1_files_without_end_line_still_load(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text(
        "# pytest-llmbench baselines for config 'old'.\nconfig: old\nshared:\n  t.py::t:\n"
        "    passed: {value: 3, direction: higher, noise: {name: Spread, spread: 1}}\nversion: 1\n"
    )
    assert load(path, "old").get(None, "t.py::t", "passed").value == 3


def test_committed_baselines_load():
    from pathlib import Path

    files = sorted((Path(__file__).parents[2] / "baselines").glob("*.yaml"))
    assert files
    for path in files:
        assert list(load(path, path.stem).keys(None)) or load(path, path.stem).runners


def test_written_files_are_readable_by_everyone(tmp_path):
    """Issue 9: mkstemp made baseline files 0600 while committed ones are 0644."""
    path = tmp_path / "x.yaml"
    write_atomic(path, dumps(sample(path)))
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
