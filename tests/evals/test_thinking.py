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
    items = [
        ("a", "gsm8k", record(reasoning="one two three", tokens=10)),
        ("b", "gsm8k", record(reasoning="one", tokens=20)),
        ("c", "gsm8k", record(finish="length", tokens=64)),
        ("d", "mbpp", record(reasoning="x y", tokens=8)),
        ("e", "mbpp", record(ok=False)),
    ]
    res = count_with(words, items, max_tokens=64)
    per = res.per_set()
    assert per["gsm8k"]["thinking_tokens"]["mean"] == pytest.approx(2.0)
    assert per["gsm8k"]["total_tokens"]["mean"] == pytest.approx((10 + 20 + 64) / 3)
    assert per["gsm8k"]["cut"] == 1 and per["gsm8k"]["stopped"] == 2
    assert res.failed == 1
    assert res.as_dict()["cut_ids"] == ["c"]


def test_common_stops_compare_the_same_prompts_only():
    """Swift post: thinking tokens on "the 125 of 142 turns where both models stopped on their own"."""
    from pytest_llmbench.evals.thinking import common_stops

    stock = count_with(
        words,
        [
            ("a", "s", record(reasoning="x " * 9, tokens=50)),
            ("b", "s", record(reasoning="x " * 3, tokens=20)),
            ("c", "s", record(finish="length", tokens=64)),
        ],
        max_tokens=64,
    )
    swift = count_with(
        words,
        [
            ("a", "s", record(reasoning="x " * 5, tokens=30)),
            ("b", "s", record(finish="length", tokens=64)),
            ("c", "s", record(reasoning="x", tokens=5)),
        ],
        max_tokens=64,
    )
    # each config's own stops would compare 9+3 against 5+1: a different pair of prompt sets
    a, b = common_stops(stock, swift)
    assert (a.thinking(), b.thinking()) == ([9], [5])
    assert [x.id for x in a.answers] == [x.id for x in b.answers] == ["a"]


def test_per_answer_counts_round_trip_through_json():
    from pytest_llmbench.evals.thinking import answers_json, from_answers_json

    res = count_with(
        words,
        [("a", "s", record(reasoning="one two", tokens=9)), ("b", "s", record(finish="length", tokens=64))],
        max_tokens=64,
    )
    back = from_answers_json(answers_json(res))
    assert back.answers == res.answers
    with pytest.raises(ValueError, match=r"tokens.json: not a per-answer"):
        from_answers_json([{"id": "a"}], where="tokens.json")
