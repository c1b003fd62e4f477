"""The shared-prefix multi-turn prompts (datasets/shared_prefix.py) and how a scenario sends them."""

from __future__ import annotations

import itertools

import pytest

from pytest_llmbench import Scenario
from pytest_llmbench.datasets.files import DatasetError
from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.datasets.shared_prefix import shared_prefix_prompts, ttft_by_turn
from pytest_llmbench.workload.records import RequestRecord


def test_groups_share_a_long_system_prompt_and_each_turn_resends_the_conversation():
    ps = shared_prefix_prompts(groups=2, conversations=3, turns=3, system_words=300, seed=4)
    assert len(ps) == 18 and len({p.id for p in ps}) == 18
    assert [p.group for p in ps[:4]] == [
        {"group": 0, "conversation": 0, "turn": 0},
        {"group": 0, "conversation": 0, "turn": 1},
        {"group": 0, "conversation": 0, "turn": 2},
        {"group": 0, "conversation": 1, "turn": 0},
    ]
    body = Scenario("gsp", dataset="prompts")
    for g in (0, 1):
        systems = {p.chat()[0]["content"] for p in ps if p.group["group"] == g}
        assert len(systems) == 1 and len(systems.pop().split()) >= 300
    assert ps[0].system != ps[9].system and ps[0].system[:22] != ps[9].system[:22]  # "…profile 1" / "2"
    for prev, turn in itertools.pairwise(ps):
        if turn.group["turn"] == 0:
            continue
        before, now = body.body(prev)["messages"], body.body(turn)["messages"]
        assert now[: len(before)] == before  # the whole earlier request is this one's prefix
        assert [m["role"] for m in now[len(before) :]] == ["assistant", "user"]
        assert now[-1] == {"role": "user", "content": turn.text}


def test_the_prompts_are_the_same_for_the_same_seed_and_differ_for_another():
    assert shared_prefix_prompts(seed=2) == shared_prefix_prompts(seed=2)
    assert shared_prefix_prompts(seed=2)[0].system != shared_prefix_prompts(seed=3)[0].system


def test_a_plain_prompt_is_sent_as_before():
    assert Scenario("s").body(Prompt("hello"))["messages"] == [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize(
    ("kwargs", "key"), [({"groups": 0}, "groups"), ({"turns": 0}, "turns"), ({"system_words": 0}, "system_words")]
)
def test_bad_sizes_name_the_key(kwargs, key):
    with pytest.raises(DatasetError, match=key):
        shared_prefix_prompts(**kwargs)


def test_ttft_by_turn_is_the_median_per_turn_of_the_successful_requests():
    ps = shared_prefix_prompts(groups=1, conversations=2, turns=2, system_words=50)
    recs = [
        RequestRecord(0, ok=True, ttft_s=0.200),
        RequestRecord(1, ok=True, ttft_s=0.020),
        RequestRecord(2, ok=True, ttft_s=0.100),
        RequestRecord(3, ok=False, ttft_s=9.0),
    ]
    assert ttft_by_turn(ps, recs) == {0: pytest.approx(150.0), 1: pytest.approx(20.0)}
