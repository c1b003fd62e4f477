"""How a finished step session becomes a step outcome, the arguments each step's session gets, and the
cost said up front. (The sessions themselves run for real in test_bisect_integration.py.)"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pytest_llmbench.bisect.builds import Materialized
from pytest_llmbench.bisect.runner import (
    TIMED_OUT,
    RunnerError,
    SessionSettings,
    StepCost,
    arm_args,
    check_pytest_args,
    cost_text,
    decide,
    failure_lines,
    recorded_step_cost,
    run_session,
    session_env,
    shown_comparison,
)
from pytest_llmbench.bisect.search import Step

STEP = Step(3, "bisect", reference=1, candidate=4)


def comp(metric="output_throughput", verdict="equivalent", ratio=1.0, higher=True, nodeid="t::x"):
    return {
        "record": "comparison",
        "nodeid": nodeid,
        "test_key": nodeid,
        "metric": metric,
        "verdict": verdict,
        "ratio": ratio,
        "ci_low": ratio * 0.97,
        "ci_high": ratio * 1.03,
        "higher_is_better": higher,
    }


SERVERS = [
    {"record": "server", "config": "smol"},
    {"record": "server", "config": "smol.reference", "role": "reference"},
]


@pytest.mark.parametrize(
    ("verdicts", "outcome"),
    [
        (["equivalent", "equivalent"], "same"),
        (["equivalent", "improved"], "same"),  # faster is not the regression sought
        (["equivalent", "regressed"], "different"),
        (["inconclusive", "regressed"], "different"),
        (["equivalent", "inconclusive"], "unknown"),
    ],
)
def test_the_comparisons_decide_the_step(verdicts, outcome):
    recs = [*SERVERS, *(comp(m, v) for m, v in zip(("output_throughput", "median_tpot_ms"), verdicts, strict=True))]
    got, skipped, reason, details = decide(recs, 1 if "regressed" in verdicts else 0, "", STEP, "output_throughput")
    assert (got, skipped) == (outcome, None)
    assert len(details["comparisons"]) == 2 and details["shown"]["metric"] == "output_throughput"
    if outcome == "unknown":
        assert reason == "inconclusive: median_tpot_ms"


def test_a_comparison_regressed_only_at_the_sessions_holm_step_makes_the_step_different():
    recs = [
        *SERVERS,
        comp(verdict="inconclusive"),
        {"record": "comparison_budget", "suite_regressed": [{"nodeid": "t::x", "metric": "output_throughput"}]},
    ]
    assert decide(recs, 1, "", STEP, "output_throughput")[0] == "different"


def test_a_build_whose_server_never_started_is_skipped_with_the_sessions_words():
    log = "...\nERROR t.py::test_serving[smol] - config smol: server exited (code 1) before becoming ready\n"
    outcome, skipped, reason, _ = decide([], 1, log, STEP, "output_throughput")
    assert (outcome, skipped) == ("skip", 4)
    assert (
        reason
        == "did not start: ERROR t.py::test_serving[smol] - config smol: server exited (code 1) before becoming ready"
    )
    ref_failed = [SERVERS[0]]
    assert decide(ref_failed, 1, "FAILED t.py::x - reference arm (bin /b1): …", STEP, "m")[:2] == ("skip", 1)


def test_the_skip_reason_is_not_cut_at_the_callers_terminal_width(tmp_path, monkeypatch):
    """xdist workers and many CI shells export COLUMNS=80, where pytest cut this reason to "server exited (..."."""
    monkeypatch.setenv("COLUMNS", "80")
    why = "config smol: server exited (code 1) before becoming ready"
    (tmp_path / "test_x.py").write_text(f"def test_x():\n    raise RuntimeError({why!r})\n")
    log = tmp_path / "session.log"
    cmd = [sys.executable, "-m", "pytest", "-rfE", "-p", "no:cacheprovider", "test_x.py"]
    with open(log, "w") as sink:
        assert run_session(cmd, sink, cwd=tmp_path, env=session_env(), timeout_s=120) == 1
    assert [line for line in failure_lines(log.read_text()) if why in line], log.read_text()[-2000:]


def test_sessions_that_no_build_explains_stop_the_bisect():
    with pytest.raises(RunnerError, match=r"step 3: the session ended with a usage error: .*unknown option"):
        decide([], 4, "ERROR: unknown option --frobnicate", STEP, "m")
    with pytest.raises(RunnerError, match="no tests collected"):
        decide([], 5, "", STEP, "m")
    with pytest.raises(RunnerError, match="wrote no comparison record"):
        decide(SERVERS, 0, "", STEP, "m")


def test_a_session_stopped_at_its_time_limit_is_unknown_not_a_broken_build():
    assert decide(SERVERS, -1, "", STEP, "m")[0] == "unknown"


def test_the_shown_comparison_is_the_most_regressed_of_the_metric():
    comps = [comp(verdict="regressed", ratio=0.9), comp(verdict="regressed", ratio=0.7), comp("median_tpot_ms")]
    assert shown_comparison(comps, "output_throughput")["ratio"] == 0.7
    lat = [
        comp("median_tpot_ms", "regressed", 1.1, higher=False),
        comp("median_tpot_ms", "regressed", 1.4, higher=False),
    ]
    assert shown_comparison(lat, "median_tpot_ms")["ratio"] == 1.4
    assert shown_comparison([comp("median_tpot_ms")], "output_throughput")["metric"] == "median_tpot_ms"


def test_arm_args_put_the_builds_on_the_arms(tmp_path):
    a, b = Materialized("a", bin_dir=tmp_path / "a"), Materialized("b", bin_dir=tmp_path / "b")
    assert arm_args(a, b) == [
        "--llmbench-reference-bin",
        str(tmp_path / "a"),
        "--llmbench-candidate-bin",
        str(tmp_path / "b"),
    ]
    i, j = Materialized("i", image="r@sha256:1"), Materialized("j", image="r@sha256:2")
    assert arm_args(i, j) == [
        "--llmbench-reference-image",
        "r@sha256:1",
        "--llmbench-candidate-image",
        "r@sha256:2",
        "--no-pull",
    ]
    with pytest.raises(RunnerError, match="every build of one bisect is a binary folder, or every one is an image"):
        arm_args(a, j)


def test_retries_double_the_budget_and_the_rounds(tmp_path):
    s = SessionSettings((), tmp_path, compare_budget_s=60, max_rounds=6)
    assert s.escalation(0) == ["--llmbench-compare-budget", "60", "--llmbench-max-rounds", "6"]
    assert s.escalation(2) == ["--llmbench-compare-budget", "240", "--llmbench-max-rounds", "24"]


@pytest.mark.parametrize(
    "arg", ["--results-dir=x", "--llmbench-reference-bin", "--llmbench-image", "--llmbench-compare-budget=9"]
)
def test_options_the_bisect_sets_are_refused_in_the_pytest_arguments(arg):
    with pytest.raises(ValueError, match="the bisect sets it for every step"):
        check_pytest_args(["benches/", "-k", "chat-1u", arg])


def _write(folder: Path, recs: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return folder


def test_the_step_cost_comes_from_an_earlier_comparison_or_bisect(tmp_path):
    session = _write(
        tmp_path / "cmp",
        [
            {"record": "comparison_plan", "rounds": 40, "seconds_per_round": 2.5},
            {"record": "arm_start", "startup_s": 90.0},
            {"record": "arm_start", "startup_s": 110.0},
        ],
    )
    cost = recorded_step_cost(session)
    assert cost is not None and cost.seconds == pytest.approx(300.0)
    assert "100 s of rounds + 2 server starts (100.0 s each)" in cost.source
    old = _write(
        tmp_path / "old",
        [
            {
                "record": "bisect",
                "steps": [
                    {"gpu_s": 10},
                    {"gpu_s": 330, "build_s": 300},  # a build waited for: not what the next step's session costs
                    {"gpu_s": 2, "outcome": "skip"},
                    {"gpu_s": 20},
                ],
            }
        ],
    )
    assert recorded_step_cost(old) == StepCost(20, f"median of 3 steps in {old}")
    assert recorded_step_cost(_write(tmp_path / "none", [{"record": "scenario"}])) is None
    # a bisect cut short (a lease that ended mid-step: step lines, no result line) prices from its steps
    cut = _write(
        tmp_path / "cut",
        [{"record": "bisect_step", "gpu_s": 182}, {"record": "bisect_step", "gpu_s": 461, "build_s": 162}],
    )
    assert recorded_step_cost(cut) == StepCost(240.5, f"median of 2 steps in {cut}")


def test_the_price_is_said_up_front():
    text = cost_text(10, 6, StepCost(300, "from X"), 3600, ["11401.0.0"])
    assert text.startswith("bisect over 10 builds (8 between good and bad): 6 comparisons")
    assert "a step ≈ 300 s (from X) → ≈ 30.0 GPU-minutes" in text and "budget 3600 GPU-s (~12 steps)" in text
    assert "1 build(s) not cached yet, made when first needed: 11401.0.0" in text
    assert "the ends step measures it" in cost_text(4, 4, None, None, [])


def test_a_session_past_its_time_limit_gets_ctrl_c_first(tmp_path):
    """pytest cleans up on SIGINT (every server it started is stopped), so that comes before any SIGKILL."""
    script = "import signal, sys, time\nsignal.signal(signal.SIGINT, lambda *a: (print('cleaned up'), sys.exit(2)))\ntime.sleep(30)\n"
    log = tmp_path / "session.log"
    with open(log, "w") as sink:
        code = run_session([sys.executable, "-c", script], sink, cwd=None, env=dict(os.environ), timeout_s=1.0)
    assert code == TIMED_OUT
    text = log.read_text()
    assert "ran past 1 s: interrupted" in text and "cleaned up" in text
