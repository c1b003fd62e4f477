"""The session verdict from plain records: one state per run, worst first, never green by omission."""

from __future__ import annotations

import pytest

from pytest_llmbench.records.verdict import READERS, Finding, State, bisect_so_far, comparisons, session_verdict


def verdict(status: str, nodeid: str = "t.py::a", **extra) -> dict:
    return {"record": "verdict", "nodeid": nodeid, "metric": "m", "status": status, **extra}


def comparison(v: str, nodeid: str = "t.py::c", metric: str = "tok/s", **extra) -> dict:
    return {"record": "comparison", "nodeid": nodeid, "metric": metric, "verdict": v, "family": "serving", **extra}


def session(failed=(), passed: int = 0, status: int = 0, **extra) -> dict:
    return {
        "record": "session",
        "pytest_exit_status": status,
        "tests": {"passed": passed, "failed": len(failed)},
        "failed": list(failed),
        **extra,
    }


@pytest.mark.parametrize(
    "records, state, exit_status",
    [
        ([], State.NOTHING_JUDGED, 0),
        ([session(passed=2)], State.NOTHING_JUDGED, 0),
        ([verdict("new"), verdict("learning")], State.NOTHING_JUDGED, 0),
        ([verdict("pass"), verdict("new")], State.PASSED, 0),
        ([verdict("pass"), verdict("REGRESSED", "t.py::b")], State.REGRESSED, 1),
        ([comparison("equivalent"), comparison("improved", metric="tpot")], State.PASSED, 0),
        ([comparison("inconclusive", underpowered=True)], State.INCONCLUSIVE, 0),
        ([verdict("pass"), comparison("inconclusive")], State.INCONCLUSIVE, 0),
        ([comparison("inconclusive", strict=True), session(failed=["t.py::c"])], State.INCONCLUSIVE, 1),
        ([verdict("pass"), comparison("regressed"), session(failed=["t.py::c"])], State.REGRESSED, 1),
        ([verdict("pass"), session(failed=["t.py::boom"], passed=1)], State.FAILED, 1),
        ([verdict("pass"), session(status=2)], State.FAILED, 2),
        ([{"record": "session_error", "source": "baselines", "message": "x.yaml: read-only"}], State.FAILED, 1),
        ([verdict("REGRESSED", recorded=True), verdict("pass", recorded=True)], State.NOTHING_JUDGED, 0),
        ([session(status=5)], State.NOTHING_JUDGED, 5),
    ],
)
def test_state_and_exit_status(records: list[dict], state: State, exit_status: int) -> None:
    v = session_verdict(records)
    assert (v.state, v.exit_status) == (state, exit_status)
    assert v.line().startswith(f"llmbench: {v.label} — ") and v.line().endswith(f"(exit status {exit_status})")


def test_a_test_failed_by_its_own_regression_is_not_a_second_failure() -> None:
    v = session_verdict([verdict("REGRESSED", "t.py::a"), session(failed=["t.py::a"])])
    assert v.state is State.REGRESSED
    assert [f.state for f in v.findings] == [State.REGRESSED]
    both = session_verdict([verdict("REGRESSED", "t.py::a"), session(failed=["t.py::a", "t.py::b"])])
    assert "1 test failed (t.py::b)" in both.detail and both.state is State.REGRESSED


def test_a_folder_merged_from_shards_counts_every_session() -> None:
    v = session_verdict([session(failed=["a.py::x"], passed=3), session(passed=2)])
    assert v.state is State.FAILED and "1 test failed (a.py::x)" in v.detail and "5 tests passed" in v.detail
    assert session_verdict([session(passed=1), session(status=2)]).exit_status == 2


def test_suite_level_holm_from_the_budget_record_regresses_and_brings_q() -> None:
    """Today compare/session.py writes q values and suite regressions in ``comparison_budget`` only."""
    recs = [
        comparison("inconclusive", p_value=0.004),
        {
            "record": "comparison_budget",
            "q_values": [{"nodeid": "t.py::c", "metric": "tok/s", "q_value": 0.008}],
            "suite_regressed": [{"nodeid": "t.py::c", "metric": "tok/s"}],
        },
    ]
    [c] = comparisons(recs)
    assert c["q_value"] == 0.008 and c["suite_verdict"] == "regressed"
    v = session_verdict(recs)
    assert v.state is State.REGRESSED and v.exit_status == 1
    assert "1 comparison regressed (1 at suite level)" in v.detail


def test_fields_on_the_record_itself_win_over_the_budget() -> None:
    recs = [
        comparison("equivalent", q_value=0.5),
        {"record": "comparison_budget", "q_values": [{"nodeid": "t.py::c", "metric": "tok/s", "q_value": 0.1}]},
    ]
    assert comparisons(recs)[0]["q_value"] == 0.5


def test_stored_suite_level_regression_is_named() -> None:
    rule = "Relative 5%; Holm q=0.004 ≤ α=0.05: REGRESSED at suite level"
    v = session_verdict([verdict("REGRESSED", rule=rule)])
    assert "1 check REGRESSED (1 at suite level)" in v.detail


def test_check_records_stand_in_when_the_session_never_wrote_verdicts() -> None:
    v = session_verdict([{"record": "check", "nodeid": "t.py::a", "metric": "m", "status": "REGRESSED"}])
    assert v.state is State.REGRESSED


def test_improvements_are_noted_not_hidden() -> None:
    v = session_verdict([verdict("improved"), comparison("improved")])
    assert v.state is State.PASSED and v.improved == 2


def test_a_new_reader_joins_through_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """The seam bisect and history results use: one function, records in, findings out."""

    def bisect(records):
        return [Finding(State.REGRESSED, "bisect: first bad build b11401") for r in records if r["record"] == "bisect"]

    monkeypatch.setattr("pytest_llmbench.records.verdict.READERS", [*READERS, bisect])
    v = session_verdict([verdict("pass"), {"record": "bisect"}])
    assert v.state is State.REGRESSED and v.detail.startswith("bisect: first bad build")


@pytest.mark.parametrize(
    ("status", "state", "exit_status"),
    [
        ("culprit", State.REGRESSED, 0),
        ("range", State.REGRESSED, 0),
        ("unknown", State.INCONCLUSIVE, 1),
        ("not-reproduced", State.PASSED, 1),
        ("broken-end", State.FAILED, 1),
    ],
)
def test_a_bisect_headline_carries_the_bisect_commands_exit_status(status, state, exit_status):
    """The H200 bisect's summary.md said "exit status 0" for an unknown end its command exited 1 on."""
    v = session_verdict([{"record": "bisect", "status": status, "message": status}])
    assert (v.state, v.exit_status) == (state, exit_status)
    assert v.line().endswith(f"(exit status {exit_status})")


def bisect_step(step: int, kind: str, ref: int, cand: int, outcome: str, *, indices: bool = True, **extra) -> dict:
    """A ``bisect_step`` line as bisect/record.py writes it, over builds named ``b0``, ``b1``, …"""
    line = {
        "record": "bisect_step",
        "step": step,
        "kind": kind,
        "attempt": 0,
        "reference": f"b{ref}",
        "candidate": f"b{cand}",
        "outcome": outcome,
        "metric": "output_throughput",
        "ratio": 0.97 if outcome == "different" else 1.0,
        "ci_low": 0.96 if outcome == "different" else 0.99,
        "ci_high": 0.98 if outcome == "different" else 1.01,
        "higher_is_better": True,
        "gpu_s": 200.0,
        **extra,
    }
    return line | ({"reference_index": ref, "candidate_index": cand} if indices else {})


#: a bisect over b0 … b8 the machine was taken from after three steps: the first slower build is in (b4, b6]
INTERRUPTED = [
    bisect_step(1, "ends", 0, 8, "different"),
    bisect_step(2, "bisect", 0, 4, "same"),
    bisect_step(3, "bisect", 4, 6, "different"),
]
RESUME = "go on with `bisect --resume` on this folder"


def test_an_interrupted_bisect_is_inconclusive_with_the_range_so_far() -> None:
    """The H200 lease-5 folder (step lines, no ``bisect`` line) said "NOTHING JUDGED" and exit status 0."""
    v = session_verdict(INTERRUPTED)
    assert (v.state, v.exit_status) == (State.INCONCLUSIVE, 1)
    assert v.detail == (
        f"bisect: interrupted after step 3 (no finding recorded): so far the first slower build is after b4, up to b6; "
        f"{RESUME}"
    )


def test_unknown_and_skipped_steps_leave_the_range_and_labels_do_without_indices() -> None:
    steps = [
        bisect_step(1, "ends", 0, 8, "different", indices=False),
        bisect_step(2, "bisect", 0, 4, "skip", indices=False, skipped="b4", reason="no binary"),
        bisect_step(3, "bisect", 0, 3, "unknown", indices=False),
        bisect_step(4, "bisect", 0, 5, "different", indices=False),
    ]
    assert "so far the first slower build is after b0, up to b5;" in session_verdict(steps).detail


def test_an_interrupted_bisect_next_to_its_culprit_says_whether_the_pair_confirmed() -> None:
    pair = [*INTERRUPTED, bisect_step(4, "bisect", 4, 5, "same")]
    assert "the first slower build is b6 (right after b5), not confirmed yet;" in session_verdict(pair).detail
    confirmed = [*pair, bisect_step(5, "confirm", 5, 6, "different")]
    assert "is b6 (right after b5), confirmation: different;" in session_verdict(confirmed).detail


@pytest.mark.parametrize(
    ("ends", "so_far"),
    [
        ("same", "no range: the ends did not reproduce the slowdown (b0 → b8: same)"),
        ("unknown", "no range yet: the ends (b0 → b8) came out unknown"),
    ],
)
def test_an_interrupted_bisect_whose_ends_did_not_differ_has_no_range(ends: str, so_far: str) -> None:
    v = session_verdict([bisect_step(1, "ends", 0, 8, ends)])
    assert (v.state, v.exit_status) == (State.INCONCLUSIVE, 1)
    assert v.detail == f"bisect: interrupted after step 1 (no finding recorded): {so_far}; {RESUME}"


def test_a_bisect_resumed_into_its_own_folder_counts_its_last_run() -> None:
    """A resumed run writes its replayed steps again, numbered from 1: the last run's lines are the bisect."""
    so_far = bisect_so_far([*INTERRUPTED[:2], *INTERRUPTED, bisect_step(4, "bisect", 4, 5, "same")])
    assert so_far is not None and [s["step"] for s in so_far.steps] == [1, 2, 3, 4] and so_far.last_good == "b5"


def test_a_finished_bisect_reads_its_bisect_line_not_its_steps() -> None:
    done = [*INTERRUPTED, {"record": "bisect", "status": "unknown", "message": "unknown between b4 and b6: budget"}]
    assert bisect_so_far(done) is None
    assert session_verdict(done).detail == "bisect: unknown between b4 and b6: budget"
