"""check-config reports every error in a file in one run (issue 54): a bad ``gpus`` hid every other error
of its file, and a ``compare:`` entry naming no config was never reported (its reference, broken, read
as "unknown" instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.cli.check_config import main as check_config
from pytest_llmbench.config import load_config_file
from pytest_llmbench.errors import ConfigError

FILE = """\
defaults: {engine: llamacpp}
flag_sets:
  small: [-c, "2048"]
configs:
  - {name: a, model: m.gguf, gpus: two}
  - {name: b, model: m.gguf, flags: [nope]}
  - {name: c, model: m.gguf, colour: blue}
  - {name: d, model: m.gguf, startup_timeout: -5}
  - {name: e, model: m.gguf, engine: tgi}
  - {name: ok, model: m.gguf}
compare:
  - {reference: a, candidate: zzz}
  - {reference: ok, candidate: ok2}
"""


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    path = tmp_path / "bad.yaml"
    path.write_text(FILE)
    return path


def test_every_error_of_the_file_is_named_with_its_file_config_and_key(bad, capsys):
    assert check_config([str(bad)]) == 1
    out = capsys.readouterr()
    lines = out.out.splitlines()
    expected = [
        f"{bad}: config 'a', key 'gpus': must be an integer, got str 'two'",
        f"{bad}: config 'b', key 'flags': unknown flag set 'nope' (known: ['small'])",
        f"{bad}: config 'c', key 'colour': unknown key (allowed: ",
        f"{bad}: config 'd', key 'startup_timeout': must be > 0",
        f"{bad}: config 'e', key 'engine': unknown engine 'tgi' (known: ",
        f"{bad}, key 'compare[0].candidate': unknown config 'zzz' (known: ['a', 'b', 'c', 'd', 'e', 'ok'])",
        f"{bad}, key 'compare[1].candidate': unknown config 'ok2' (known: ",
    ]
    assert len(lines) == len(expected), lines
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)
    assert "check-config: 7 error(s)" in out.err
    assert not any("'compare[0].reference'" in line for line in lines)  # a is declared, only broken


def test_a_session_still_stops_at_the_first_error_and_the_reader_keeps_the_rest(bad):
    from pytest_llmbench.config import read_config_file

    with pytest.raises(ConfigError, match="config 'a', key 'gpus'"):
        load_config_file(bad)
    loaded = read_config_file(bad)
    assert [c.name for c in loaded.configs] == ["e", "ok"]  # e's engine is the registry's to judge
    assert loaded.names == ["a", "b", "c", "d", "e", "ok"]
    assert {(e.config, e.key) for e in loaded.errors} == {
        ("a", "gpus"),
        ("b", "flags"),
        ("c", "colour"),
        ("d", "startup_timeout"),
    }
    assert sorted(c.name for c in loaded.broken) == ["a", "b", "c", "d"]


def test_a_broken_config_with_an_unknown_engine_gets_both_errors(tmp_path, capsys):
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    path = tmp_path / "two.yaml"
    path.write_text("configs: [{name: x, engine: tgi, model: m.gguf, gpus: many}]\n")
    assert check_config([str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 2)[1] for line in lines] == ["config 'x', key 'gpus'", "config 'x', key 'engine'"]


def test_a_file_that_is_not_a_mapping_is_one_error_and_other_files_still_checked(tmp_path, capsys):
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    (tmp_path / "a.yaml").write_text("- just a list\n")
    (tmp_path / "b.yaml").write_text("configs: [{name: y, engine: llamacpp, model: m.gguf, gpus: -1}]\n")
    assert check_config([str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "a.yaml: top level must be a mapping" in lines[0] and "key 'gpus'" in lines[1]


def test_a_bad_default_is_reported_once_not_again_as_missing_in_every_config(tmp_path, capsys):
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    path = tmp_path / "d.yaml"
    path.write_text("defaults: {engine: 5}\nconfigs: [{name: a, model: m.gguf}, {name: b, engine: llamacpp}]\n")
    assert check_config([str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{path}, key 'defaults.engine': must be a string, got int 5",
        f"{path}: config 'b', key 'model': is required (set it on the config or in defaults)",
    ]
