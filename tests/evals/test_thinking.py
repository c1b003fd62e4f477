"""Thinking tokens on answers that stopped; totals with cut answers at the limit, flagged."""

import pytest

from pytest_llmbench.evals.thinking import answer_tokens, count_with

from .fakes import record


def words(text):  # a stand-in tokenizer: one token per word
    return text.split()


def test_stopped_answer_counts_its_reasoning_tokens():
    a = answer_tokens(record(reasoning="let me think about it", tokens=30), words, 100)
    assert (a.thinking_tokens, a.total_tokens, a.stopped, a.cut) == (5, 30, True, False)


def test_cut_answer_counts_at_the_limit_and_has_no_thinking_count():
    a = answer_tokens(record(reasoning="long long", finish="length", tokens=97), words, 100)
    assert (a.thinking_tokens, a.total_tokens, a.stopped, a.cut) == (None, 100, False, True)


def test_answer_without_reasoning_thinks_zero_tokens():
    assert answer_tokens(record(tokens=12), words, 100).thinking_tokens == 0


def test_means_per_set():
    items = [("a", "gsm8k", record(reasoning="one two three", tokens=10)),
             ("b", "gsm8k", record(reasoning="one", tokens=20)),
             ("c", "gsm8k", record(finish="length", tokens=64)),
             ("d", "mbpp", record(reasoning="x y", tokens=8)),
             ("e", "mbpp", record(ok=False))]
    res = count_with(words, items, max_tokens=64)
    per = res.per_set()
    assert per["gsm8k"]["thinking_tokens"]["mean"] == pytest.approx(2.0)
    assert per["gsm8k"]["total_tokens"]["mean"] == pytest.approx((10 + 20 + 64) / 3)
    assert per["gsm8k"]["cut"] == 1 and per["gsm8k"]["stopped"] == 2
    assert res.failed == 1
    assert res.as_dict()["cut_ids"] == ["c"]
