"""The source protocol and the registry: a set defined outside the package loads like a shipped one."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.datasets import SOURCES, LocalSource, Prompt, Source, WheelSource, get_source, load, register


def test_every_shipped_set_is_registered_and_follows_the_protocol():
    assert {
        "sharegpt",
        "mt-bench",
        "humaneval",
        "gsm8k",
        "math500",
        "mbpp",
        "speed-bench-qualitative",
        "speed-bench-throughput",
        "sys1bench-canary",
        "typed-gguf-devset",
        "typed-decisions",
        "typed-decision-bench",
        "calibrated-typed-decisions",
        "pubmedqa",
        "procedural-typed-decisions",
    } <= set(SOURCES)
    assert all(isinstance(s, Source) and s.name == name for name, s in SOURCES.items())


def test_an_unknown_set_lists_the_known_ones():
    with pytest.raises(KeyError, match=r"unknown data set 'squad'; known: .*mt-bench"):
        get_source("squad")


def test_a_user_defined_local_source_loads_from_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("LLMBENCH_MY_SET", raising=False)
    (tmp_path / "my").mkdir()
    (tmp_path / "my" / "lines.txt").write_text("one\ntwo\n")
    source = LocalSource("my-set", ("my/lines.txt",), lambda p: [Prompt(t) for t in Path(p).read_text().split()])
    try:
        assert register(source) is source
        assert [p.text for p in load("my-set", folder=tmp_path)] == ["one", "two"]
    finally:
        SOURCES.pop("my-set")


def test_a_wheel_source_can_be_pointed_at_another_copy(tmp_path, monkeypatch):
    copy = tmp_path / "question.jsonl"
    copy.write_text('{"question_id": 1, "turns": ["hi"], "category": "x"}\n')
    monkeypatch.setenv("LLMBENCH_MT_BENCH", str(copy))
    mt = get_source("mt-bench")
    assert isinstance(mt, WheelSource) and mt.path() == copy
    assert [p.id for p in load("mt-bench")] == ["mt-bench-1"]
