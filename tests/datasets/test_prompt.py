"""The one Prompt: a single message or several turns, the chat messages it becomes."""

import pytest

from pytest_llmbench.datasets.prompt import Prompt


def test_a_single_message_and_a_multi_turn_prompt_are_the_same_type():
    single = Prompt("hello", 12)
    assert single.turns == ("hello",) and single.text == "hello" and single.input_tokens == 12
    multi = Prompt(id="mt-1", set="mt-bench", turns=["q1", "q2"], group={"category": "math"})
    assert multi.text == "q1" and multi.turns == ("q1", "q2")  # a list is kept as a tuple
    assert multi.first_turn() == Prompt(id="mt-1", set="mt-bench", turns=("q1",), group={"category": "math"})
    with pytest.raises(ValueError, match="text and the first turn differ"):
        Prompt("a", turns=("b",))


def test_messages_replay_earlier_answers():
    p = Prompt(id="x", set="s", turns=("q1", "q2"), system="be brief")
    assert p.messages() == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q1"}]
    assert p.messages(1, ["a1"]) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]
    with pytest.raises(ValueError, match="turn 1 of prompt x needs the 1 earlier answer"):
        p.messages(1, [])
    with pytest.raises(IndexError, match="prompt x has 2 turn"):
        p.messages(2, ["a1", "a2"])
