"""gate/files.py: a gate file is replaced whole or not at all."""

from __future__ import annotations

import os

import pytest

from pytest_llmbench.gate import files
from pytest_llmbench.gate.files import write_atomic


def test_atomic_write_leaves_the_old_file_when_replace_fails(tmp_path, monkeypatch):
    path = tmp_path / "cfg.yaml"
    path.write_text("old\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken_replace)
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

    monkeypatch.setattr(files.os, "replace", spy)
    write_atomic(path, "new\n" * 1000)
    assert seen == [("new\n" * 1000, "old\n")]
    assert path.read_text() == "new\n" * 1000
