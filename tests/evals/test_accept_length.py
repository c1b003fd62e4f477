"""Accept length: SE against scipy, multi-turn playback, grouping, and what is left out."""

import math

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.evals.accept_length import AcceptLengthResult, Summary, TurnResult, run_accept_length

from .fakes import FakeRun, record


def test_summary_matches_scipy_sem():
    values = [2.1, 3.4, 2.9, 4.0, 3.3, 2.5]
    s = Summary.of(values)
    assert s.mean == pytest.approx(np.mean(values))
    assert s.se == pytest.approx(stats.sem(values))
    assert s.n == 6


def test_summary_of_one_value_has_no_se():
    s = Summary.of([3.0])
    assert s.n == 1 and math.isnan(s.se)
    assert s.as_dict() == {"mean": 3.0, "se": None, "n": 1}


def _accept_for(body):
    # A deterministic "engine": accept length from the last user message's length.
    last = body["messages"][-1]["content"]
    return record(text=f"answer to {last}", accept=1.0 + len(last) / 10, tokens=20)


def test_multi_turn_prompts_replay_the_models_answers():
    prompts = [Prompt(id="a", set="s", turns=("hello", "more please")), Prompt(id="b", set="s", turns=("hi",))]
    fake = FakeRun(_accept_for)
    res = run_accept_length(None, prompts, "dflash2-card", run=fake)
    assert len(fake.calls) == 2  # a round of first turns, then a round of second turns
    second = fake.calls[1]["bodies"][0]["messages"]
    assert second[1] == {"role": "assistant", "content": "answer to hello"}
    assert [(t.prompt.id, t.turn) for t in res.turns] == [("a", 0), ("b", 0), ("a", 1)]
    assert res.values == pytest.approx([1.5, 1.2, 2.1])
    body = fake.calls[0]["bodies"][0]
    assert body["temperature"] == 1.0 and body["reasoning_effort"] == "xhigh" and "ignore_eos" not in body


def test_overrides_reach_the_request_and_concurrency_defaults_to_the_protocols_users():
    fake = FakeRun(_accept_for)
    run_accept_length(None, [Prompt(id="a", set="s", turns=("x",))], "dflash2-card", run=fake, max_tokens=64)
    assert fake.calls[0]["bodies"][0]["max_tokens"] == 64
    assert fake.calls[0]["concurrency"] == 1


def test_a_failed_turn_ends_its_conversation_and_is_counted():
    fake = FakeRun(lambda b: record(ok=False) if b["messages"][-1]["content"] == "boom" else _accept_for(b))
    res = run_accept_length(
        None, [Prompt(id="a", set="s", turns=("boom", "never sent")), Prompt(id="b", set="s", turns=("ok",))], run=fake
    )
    assert res.failed == 1 and len(res.turns) == 2
    assert res.values == pytest.approx([1.2])
    assert "a#0" in res.errors[0]


def test_requests_without_spec_stats_are_left_out_and_counted():
    res = AcceptLengthResult(
        "s",
        "p",
        [
            TurnResult(Prompt(id="a", set="s", turns=("x",)), 0, record(accept=3.0)),
            TurnResult(Prompt(id="b", set="s", turns=("x",)), 0, record(accept=None)),
        ],
    )
    assert res.values == [3.0] and res.without_spec == 1


def test_grouped_by_domain_each_with_its_se():
    turns = [
        TurnResult(Prompt(id=f"p{i}", set="speed", turns=("x",), group={"domain": d}), 0, record(accept=v))
        for i, (d, v) in enumerate([("code", 4.0), ("code", 3.0), ("code", 3.5), ("chat", 2.0), ("chat", 2.4)])
    ]
    res = AcceptLengthResult("speed", "speed-bench", turns)
    by = res.by("domain")
    assert list(by) == ["chat", "code"]
    assert by["code"].mean == pytest.approx(3.5) and by["code"].se == pytest.approx(stats.sem([4.0, 3.0, 3.5]))
    assert by["chat"].n == 2
    d = res.as_dict(group_keys=["domain"])
    assert d["by_domain"]["code"]["n"] == 3 and d["accept_length"]["n"] == 5


def test_median_tpot_over_requests_skips_failed_and_one_token_answers():
    """SPEED-Bench's "median time per output token 4.49 vs 4.47 ms": (e2e − ttft) / (n − 1) per request."""
    from pytest_llmbench.workload.records import RequestRecord

    def rec(ttft, e2e, n, ok=True):
        return RequestRecord(index=0, ok=ok, ttft_s=ttft, e2e_s=e2e, completion_tokens=n)

    p = Prompt(id="a", set="s", turns=("x",))
    turns = [
        TurnResult(p, 0, rec(0.1, 1.1, 201)),
        TurnResult(p, 0, rec(0.2, 0.8, 101)),
        TurnResult(p, 0, rec(0.1, 9.0, 3, ok=False)),
        TurnResult(p, 0, rec(0.1, 0.2, 1)),
        TurnResult(p, 0, rec(0.0, 0.9, 101)),
    ]
    res = AcceptLengthResult("s", "speed-bench", turns)
    assert res.median_tpot_ms() == pytest.approx(6.0)  # of 5, 6, 9 ms
    assert AcceptLengthResult("s", "speed-bench", []).median_tpot_ms() is None


def test_by_case_keys_prompt_turn_and_sampling_seed():
    fake = FakeRun(_accept_for)
    prompts = [Prompt(id="a", set="s", turns=("hello", "more please")), Prompt(id="b", set="s", turns=("hi",))]
    res = run_accept_length(None, prompts, "dflash2-card-cpu", run=fake)  # sampling seed 1
    assert res.by_case() == pytest.approx({"a#0@seed1": 1.5, "b#0@seed1": 1.2, "a#1@seed1": 2.1})
    other = run_accept_length(None, prompts, "dflash2-card-cpu", run=FakeRun(_accept_for), seed=7)
    assert set(other.by_case()) == {"a#0@seed7", "b#0@seed7", "a#1@seed7"}  # another seed, other cases
    no_seed = run_accept_length(None, prompts[1:], "dflash2-card", run=FakeRun(_accept_for))
    assert list(no_seed.by_case()) == ["b#0"]
