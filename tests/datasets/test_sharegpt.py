"""ShareGPT first turns, read incrementally so a cut-off file still gives every whole record."""

from __future__ import annotations

import json

import pytest

from pytest_llmbench.datasets.files import DatasetError, DatasetNotFound
from pytest_llmbench.datasets.sharegpt import iter_json_array, sharegpt_first_turns, sharegpt_path, sharegpt_prompts


def conv(i, first="human"):
    return {
        "id": str(i),
        "conversations": [{"from": first, "value": f"question number {i:03d}"}, {"from": "gpt", "value": "answer"}],
    }


def test_a_truncated_file_yields_every_whole_record_before_the_cut(tmp_path):
    text = json.dumps([conv(i) for i in range(50)])
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) - 30])  # the last record is cut
    rows = list(iter_json_array(path, chunk_size=64))  # small chunks: records span reads
    assert [r["id"] for r in rows] == [str(i) for i in range(49)]


def test_first_turns_need_a_human_turn_and_sampling_is_fixed_by_seed(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([conv(i) for i in range(20)] + [conv(99, first="gpt")]))
    turns = sharegpt_first_turns(str(path))
    assert len(turns) == 20 and "question number 099" not in turns
    a = sharegpt_prompts(5, seed=1, path=path)
    assert [p.text for p in a] == [p.text for p in sharegpt_prompts(5, seed=1, path=path)]
    assert [p.text for p in a] != [p.text for p in sharegpt_prompts(5, seed=2, path=path)]
    with pytest.raises(DatasetError, match=r"only 20 ShareGPT prompts of 16–4000 chars, 21 wanted"):
        sharegpt_prompts(21, seed=1, path=path)


def test_files_that_are_not_sharegpt_name_themselves(tmp_path, monkeypatch):
    (tmp_path / "obj.json").write_text('{"a": 1}')
    with pytest.raises(DatasetError, match=r"obj.json: expected a JSON array of conversations"):
        list(iter_json_array(tmp_path / "obj.json"))
    with pytest.raises(DatasetNotFound, match=r"missing.json: cannot read"):
        list(iter_json_array(tmp_path / "missing.json"))
    monkeypatch.setenv("LLMBENCH_SHAREGPT", str(tmp_path / "mine.json"))
    assert sharegpt_path() == tmp_path / "mine.json"


def test_the_shipped_wheel_has_real_first_turns(monkeypatch):
    monkeypatch.delenv("LLMBENCH_SHAREGPT", raising=False)
    prompts = sharegpt_prompts(8, seed=1)
    assert len({p.text for p in prompts}) == 8 and all(16 <= len(p.text) <= 4000 for p in prompts)
