"""The end-of-session table (regressions first) and the suite's Holm step across comparisons."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_llmbench import stash
from pytest_llmbench.compare import suite, table
from pytest_llmbench.gate.budget import Budget


def rec(
    metric, verdict, p, *, ratio=None, difference=None, family="timing", ignore=0.03, hib=True, nodeid="t::a", **extra
):
    return {
        "record": "comparison",
        "config": "c",
        "nodeid": nodeid,
        "test_key": nodeid,
        "scenario": "s",
        "metric": metric,
        "verdict": verdict,
        "p_value": p,
        "ratio": ratio,
        "difference": difference,
        "ci_low": (ratio or difference or 0) - 0.01,
        "ci_high": (ratio or difference or 0) + 0.01,
        "family": family,
        "ignore": ignore,
        "detect": 2 * ignore,
        "higher_is_better": hib,
        "rounds": 4,
        "prompts": 24,
        "reference": 100.0,
        "candidate": 90.0,
        "kind": "ratio" if ratio else "difference",
        "rules_out": 0.11,
        "detectable": 0.05,
        "stop": "planned",
        **extra,
    }


def test_table_puts_regressions_first_then_inconclusive():
    lines = table.render(
        [
            rec("b", "equivalent", 0.9, ratio=1.0),
            rec("a", "regressed", 1e-4, ratio=0.9),
            rec("c", "inconclusive", 0.2, ratio=0.98),
            rec("d", "improved", 1.0, ratio=1.2),
        ]
    )
    body = lines[2:]
    assert [line.split()[0] for line in body] == ["REGRESSED", "inconclusive", "improved", "equivalent"]
    assert "×0.900 [0.890, 0.910]" in body[0] and "11% / 5%" in body[0] and body[0].rstrip().endswith("planned")


def test_an_underpowered_comparison_says_so_and_why():
    lines = table.render(
        [
            rec(
                "a",
                "inconclusive",
                0.2,
                ratio=0.98,
                underpowered=True,
                stop="underpowered",
                stop_reason="underpowered: needs ~80 rounds for 3% at the measured 4% SD",
            )
        ]
    )
    assert lines[2].startswith("inconclusive (underpowered)")
    assert lines[-1] == "  c s: underpowered: needs ~80 rounds for 3% at the measured 4% SD"
    assert table.reach(rec("a", "x", 0.1, ratio=0.9)) == (
        "rules out a slowdown > 11%; could catch ~5% at the measured SD"
    )


def test_counts_line_names_rounds_and_prompts_once_per_run():
    rows = [rec("a", "regressed", 1e-4, ratio=0.9), rec("b", "equivalent", 0.9, ratio=1.0)]
    assert table.counts(rows) == (
        "2 comparisons: 1 regressed, 1 equivalent; rounds used per scenario 4–4, prompts sent (both arms) 24"
    )


def test_holm_marks_a_later_step_regression_at_suite_level_only_beyond_the_margin():
    rows = [
        rec("a", "regressed", 0.001, ratio=0.80),
        rec("b", "inconclusive", 0.012, ratio=0.90),
        rec("c", "inconclusive", 0.012, ratio=0.99),
        rec("d", "equivalent", 0.9, ratio=1.0),
    ]
    out = suite.adjust(rows, {"timing": 0.05, "quality": 0.05, "decisions": 0.05})
    assert [r.get("q_value") for r in out] == pytest.approx([0.004, 0.036, 0.036, 0.9])
    # b: q 0.036 ≤ 0.05 and 10% worse than a 3% margin → regressed at suite level; c: inside the margin
    assert [r.get("suite_verdict") for r in out] == [None, "regressed", None, None]
    assert rows[1].get("suite_verdict") is None  # the input is not modified


def test_holm_is_per_family_and_off_without_a_budget():
    rows = [
        rec("tput", "inconclusive", 0.03, ratio=0.9),
        rec("accept_length", "inconclusive", 0.03, difference=-0.5, family="quality", ignore=0.1),
    ]
    out = suite.adjust(rows, {"timing": 0.05, "quality": 0.05, "decisions": 0.05})
    assert [r["q_value"] for r in out] == [0.03, 0.03]  # one comparison per family: no adjustment
    assert [r["suite_verdict"] for r in out] == ["regressed", "regressed"]
    bare = suite.adjust(rows, None)  # no family budget: q is still there for the reader, no suite verdict
    assert [r["q_value"] for r in bare] == [0.03, 0.03] and not any("suite_verdict" in r for r in bare)


def test_a_fixed_per_comparison_alpha_binds_the_suite_level_too():
    """Found in CI: one comparison at --llmbench-compare-alpha 0.001 read p=0.004 (its own verdict
    inconclusive), and Holm at the gate's 0.02 made it a suite-level regression that failed the session."""
    rows = [rec("tput", "inconclusive", 0.0044, ratio=0.91)]
    gate = {"timing": 0.02, "quality": 0.02, "decisions": 0.01}
    assert suite.adjust(rows, gate)[0]["suite_verdict"] == "regressed"  # what the session did
    fixed = suite.family_alphas(0.001, {"timing": 1}, gate)
    assert fixed == {"timing": 0.001, "quality": 0.001, "decisions": 0.001}
    assert "suite_verdict" not in suite.adjust(rows, fixed)[0]
    # P stands for a family rate of P x the comparisons counted up front; without P, the gate's budget
    assert suite.family_alphas(0.001, {"timing": 4}, gate)["timing"] == pytest.approx(0.004)
    assert suite.family_alphas(None, {"timing": 4}, gate) == gate and suite.family_alphas(None, {}, None) is None


def test_the_sessions_stored_checks_join_the_comparisons_holm_pass():
    """Issue 54: a quality comparison at p=0.03 beside two stored quality checks (p 0.01, 0.03) was judged by
    Holm over the comparisons alone (q 0.03: regressed at suite level) while the gate ran its own pass: the
    family spent its alpha twice. In one pass over the three its q is 0.06."""
    rows = [rec("accept_length", "inconclusive", 0.03, difference=-0.5, family="quality", ignore=0.1)]
    alphas = {"timing": 0.05, "quality": 0.05, "decisions": 0.05}
    assert suite.adjust(rows, alphas)[0]["suite_verdict"] == "regressed"  # the comparisons' pass alone
    shared = Budget(alphas, counts={"quality": 2}, compared={"quality": 1})
    shared.sources["gate"] = lambda: {"quality": [0.01, 0.03]}
    (joint,) = suite.adjust(rows, alphas, shared)
    assert joint["q_value"] == pytest.approx(0.06) and "suite_verdict" not in joint
    # and the levels a test fails at: the family's alpha over the gates and comparisons counted up front
    levels = suite.comparison_alphas(None, alphas, {"quality": 1}, shared)
    assert levels["quality"] == pytest.approx(0.05 / 3) and levels["timing"] == pytest.approx(0.05)
    assert suite.comparison_alphas(None, alphas, {"quality": 1}, None)["quality"] == pytest.approx(0.05)


def test_a_comparison_session_joins_the_gates_budget_where_there_is_one():
    counted_items: list[object] = []
    shared = Budget({"timing": 0.02, "quality": 0.02, "decisions": 0.01})
    gate = SimpleNamespace(budget=shared, count_gates=counted_items.append)
    config = SimpleNamespace(stash={stash.GATE: gate})
    joined = suite.join_gate_budget(config, {"timing": 3}, ["item"], lambda: {"timing": [0.5]})
    assert joined is shared and counted_items == [["item"]]  # the gate counted first: the levels need it
    assert shared.compared == {"timing": 3, "quality": 0, "decisions": 0}
    assert shared.sources["comparisons"]() == {"timing": [0.5]}
    assert suite.join_gate_budget(SimpleNamespace(stash={}), {"timing": 3}, [], dict) is None  # no gate
    off = SimpleNamespace(stash={stash.GATE: SimpleNamespace(budget=None)})  # --gate-alpha off
    assert suite.join_gate_budget(off, {"timing": 3}, [], dict) is None


def test_arms_lines_compare_startup_and_memory():
    starts = [
        {"config": "c", "role": "reference", "label": "bin /old", "startup_s": 2.0, "host_rss_bytes": 400 * 2**20},
        {
            "config": "c",
            "role": "candidate",
            "label": "installed build",
            "startup_s": 3.0,
            "host_rss_bytes": 500 * 2**20,
        },
    ]
    (line,) = table.arms_lines(starts)
    assert line.startswith("c: reference [bin /old] vs candidate [installed build]")
    assert "startup 2.0→3.0 s (×1.50, 1+1 starts)" in line and "RSS 400.0→500.0 MiB (×1.25" in line


def test_a_comparison_below_the_floor_says_why_under_the_table():
    row = rec(
        "tput",
        "inconclusive",
        1.0,
        ratio=0.8,
        method="log-ratio t over 2 server pairs; budget too small to judge: 2 units (1 df, 3 needed)",
    )
    lines = table.render([row])
    assert lines[-1].strip() == "c s tput: budget too small to judge: 2 units (1 df, 3 needed)"
