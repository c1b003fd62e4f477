"""A bisect spread over two runs (two device leases): the second answers the first's recorded steps from its
results.jsonl and goes on live from where the first stopped; the record it reads is checked against the builds."""

from __future__ import annotations

import json

import pytest

from pytest_llmbench.bisect.record import BisectLog
from pytest_llmbench.bisect.resume import Replay, recorded_steps
from pytest_llmbench.bisect.search import Search, Step

from .test_search import Simulated

N, FIRST_SLOW = 17, 11
LABELS = [f"b{i}" for i in range(N)]


def _first_run(folder, sim, budget_s):
    """A run whose budget stops it, its steps written as they finish (what the CLI does)."""
    log = BisectLog(folder)
    found = Search(N, sim, budget_s=budget_s, names=LABELS, on_step=lambda s, r: log.step(s, r, LABELS)).run()
    return found


def test_a_resumed_bisect_replays_the_record_and_runs_only_the_steps_it_lacks(tmp_path):
    first = Simulated(N, FIRST_SLOW, unclear={(8, 12)}, seconds=100.0)
    cut = _first_run(tmp_path, first, budget_s=350)
    assert cut.status == "unknown" and len(first.steps) == 3, cut.message  # ends + two halvings, then out of budget
    live = Simulated(N, FIRST_SLOW, unclear={(8, 12)}, seconds=100.0)
    replay = Replay(recorded_steps(tmp_path, LABELS), LABELS, live)
    found = Search(N, replay, names=LABELS).run()
    assert found.status == "culprit" and found.culprit == FIRST_SLOW, found.message
    whole = Simulated(N, FIRST_SLOW, unclear={(8, 12)}, seconds=100.0)
    Search(N, whole, names=LABELS).run()
    # the two runs together made exactly the steps one uninterrupted run makes, none of them twice
    assert first.steps + live.steps == whole.steps
    assert [s for s, r in found.steps if r.replayed] == first.steps and not replay.unused
    # this run's GPU-seconds are its own steps'; the replayed ones keep what they cost when they ran
    assert found.seconds == sum(r.seconds for s, r in found.steps[3:]) and found.steps[0][1].seconds == 100.0


def test_a_third_run_names_where_each_replayed_step_was_measured(tmp_path):
    """Lease 4 resumed lease 3's record and lease 5 resumes lease 4's: a step lease 4 only replayed names lease 3."""
    one, two = tmp_path / "one", tmp_path / "two"
    _first_run(one, Simulated(N, FIRST_SLOW, seconds=100.0), budget_s=250)  # ends + one halving
    log = BisectLog(two)
    replay = Replay(recorded_steps(one, LABELS), LABELS, Simulated(N, FIRST_SLOW, seconds=100.0))
    Search(N, replay, budget_s=150, names=LABELS, on_step=lambda s, r: log.step(s, r, LABELS)).run()
    third = recorded_steps(two, LABELS)
    sources = [r.result.details["replayed_from"] for r in third]
    assert len(third) == 3 and sources[:2] == [f"{one / 'results.jsonl'}:{n}" for n in (1, 2)], sources
    assert sources[2] == f"{two / 'results.jsonl'}:3"  # the one step the second run measured


def test_a_retry_the_first_run_could_not_afford_is_what_the_resumed_run_runs_first(tmp_path):
    # the ends are inconclusive and the budget holds no retry at twice the units (100 + 200 > 250)
    first = Simulated(N, FIRST_SLOW, unclear={(0, N - 1)}, seconds=100.0)
    cut = _first_run(tmp_path, first, budget_s=250)
    assert cut.status == "not-reproduced" and [s.attempt for s in first.steps] == [0]
    live = Simulated(N, FIRST_SLOW, unclear={(0, N - 1)}, seconds=100.0)
    found = Search(N, Replay(recorded_steps(tmp_path, LABELS), LABELS, live), names=LABELS).run()
    assert live.steps[0] == Step(2, "ends", 0, N - 1, attempt=1), live.steps[0]
    assert found.status == "culprit" and found.culprit == FIRST_SLOW


def test_replayed_steps_cost_the_budget_nothing_but_price_the_next_step(tmp_path):
    first = Simulated(N, FIRST_SLOW, seconds=100.0)
    _first_run(tmp_path, first, budget_s=250)  # ends + one halving
    live = Simulated(N, FIRST_SLOW, seconds=100.0)
    # 150 s of budget: one live step of ~100 s fits (0 spent + 100), the second does not (100 + 100)
    found = Search(N, Replay(recorded_steps(tmp_path, LABELS), LABELS, live), budget_s=150, names=LABELS).run()
    assert len(live.steps) == 1 and found.status == "unknown" and "(100 of 150 GPU-s, a step ~100)" in found.message


def test_the_budget_never_refuses_a_step_the_record_answers(tmp_path):
    """Found on the H200 lease-3 record: resumed with a budget that holds no live step, the search stopped after
    the replayed ends instead of walking every recorded step to where the record ends."""
    first = Simulated(N, FIRST_SLOW, seconds=100.0)
    cut = _first_run(tmp_path, first, budget_s=350)  # ends + two halvings
    live = Simulated(N, FIRST_SLOW, seconds=100.0)
    replay = Replay(recorded_steps(tmp_path, LABELS), LABELS, live)
    found = Search(N, replay, budget_s=1, names=LABELS, recorded=replay.has).run()
    assert live.steps == [] and not replay.unused and len(found.steps) == 3
    assert (found.status, found.last_good, found.first_bad) == ("unknown", cut.last_good, cut.first_bad)
    assert found.message.endswith("the budget is spent (0 of 1 GPU-s, a step ~100)"), found.message


def test_a_finished_bisect_resumed_runs_nothing_and_finds_the_same(tmp_path):
    done = _first_run(tmp_path, Simulated(N, FIRST_SLOW, seconds=10.0), budget_s=None)
    live = Simulated(N, FIRST_SLOW, seconds=10.0)
    replay = Replay(recorded_steps(tmp_path, LABELS), LABELS, live)
    found = Search(N, replay, names=LABELS).run()
    assert live.steps == [] and replay.live_steps == 0 and found.seconds == 0
    assert (found.status, found.culprit, found.message) == (done.status, done.culprit, done.message)


def test_recorded_steps_the_search_never_asks_for_are_named(tmp_path):
    log = BisectLog(tmp_path)
    stray = Step(1, "bisect", 2, 3)  # from a run over another build order: this search never compares b2 → b3
    log.step(stray, Simulated(N, FIRST_SLOW)(stray), LABELS)
    replay = Replay(recorded_steps(tmp_path, LABELS), LABELS, Simulated(N, FIRST_SLOW))
    Search(N, replay, names=LABELS).run()
    assert [r.key for r in replay.unused] == [("bisect", "b2", "b3", 0)]
    assert replay.unused[0].where == f"{tmp_path / 'results.jsonl'}:1"


def test_a_record_of_other_builds_is_refused_naming_the_line_and_the_build(tmp_path):
    (tmp_path / "results.jsonl").write_text(
        json.dumps({"record": "bisect_step", "kind": "ends", "reference": "b0", "candidate": "x99", "outcome": "same"})
        + "\n"
    )
    with pytest.raises(ValueError, match=r"results\.jsonl:1: build 'x99' is not among this bisect's builds"):
        recorded_steps(tmp_path, LABELS)


def test_a_folder_without_a_record_or_steps_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"no results\.jsonl"):
        recorded_steps(tmp_path / "nowhere", LABELS)
    (tmp_path / "results.jsonl").write_text(json.dumps({"record": "bench", "name": "x"}) + "\n")
    with pytest.raises(ValueError, match="no bisect_step lines"):
        recorded_steps(tmp_path, LABELS)
    (tmp_path / "results.jsonl").write_text(
        json.dumps({"record": "bisect_step", "kind": "ends", "reference": "b0", "candidate": "b1", "outcome": "bad"})
        + "\n"
    )
    with pytest.raises(ValueError, match="outcome 'bad' is not one of"):
        recorded_steps(tmp_path, LABELS)
