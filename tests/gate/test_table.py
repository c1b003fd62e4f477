"""The rendered verdict table (syrupy snapshot) and its ordering."""

from __future__ import annotations

from pytest_llmbench.gate.table import counts, ordered, render
from pytest_llmbench.gate.types import Verdict


def v(
    metric,
    observed,
    baseline,
    tol,
    status,
    direction="higher",
    test="benches/test_serving.py::test_chat[1user]",
    p=None,
    q=None,
    paired=False,
):
    return Verdict(
        metric=metric,
        observed=observed,
        baseline=baseline,
        tolerance=tol,
        rule="r",
        status=status,
        direction=direction,
        noise="n",
        config="cpu-nodraft",
        test_key=test,
        p_value=p,
        q_value=q,
        paired=paired,
    )


VERDICTS = [
    v("accept_length", 3.41, 3.38, 0.45, "pass", p=0.62, q=1.0, paired=True),
    v("median_ttft_ms", 88.2, 86.0, 8.6, "pass", "lower"),
    v("output_throughput", 121.7, 148.1, 5.924, "REGRESSED", p=3.1e-7, q=1.2e-6),
    v("bfcl_passed", 185, 172.7, 14.42, "improved", test="benches/test_bfcl.py::test_bfcl", p=0.99, q=1.0),
    v("failed", 0, None, None, "new", "lower"),
]


def test_regressions_first_then_improved_new_pass():
    assert [x.status for x in ordered(VERDICTS)] == ["REGRESSED", "improved", "new", "pass", "pass"]
    assert counts(VERDICTS) == "1 regressed, 1 improved, 1 new, 2 pass"


def test_rendered_table(snapshot):
    assert "\n".join(render(VERDICTS)) == snapshot


def test_summary_separates_judged_checks_from_new_learning_and_not_comparable():
    """Issue 21: "0 REGRESSED" over 27 checks that were never compared read as a clean run."""
    from pytest_llmbench.gate.table import not_judged, summary
    from pytest_llmbench.gate.types import Verdict

    def v(status, rule="r", test="t"):
        return Verdict(
            metric="m",
            observed=1.0,
            baseline=None,
            tolerance=None,
            rule=rule,
            status=status,
            direction="higher",
            noise="History(k=3)",
            config="c",
            test_key=test,
        )

    vs = [
        v("pass"),
        v("improved"),
        v("new"),
        v("new"),
        v("learning", "learning (2 of 6 runs recorded; judged from 6; …)"),
        v("not comparable", "host busy during chat-1u: other processes used 0.9 of 2 cores", "t1"),
        v("not comparable", "host busy during chat-1u: other processes used 0.9 of 2 cores", "t2"),
    ]
    assert summary(vs) == (
        "llmbench: 2 of 7 checks judged (1 improved, 1 pass); not judged: 2 not comparable, 1 learning, 2 new"
    )
    assert not_judged(vs) == [
        "  not comparable (2 checks: c t1, c t2): host busy during chat-1u: other processes used 0.9 of 2 cores"
    ]
    assert summary([v("new")]) == "llmbench: 0 of 1 checks judged; not judged: 1 new"
    from pytest_llmbench.gate.table import label

    assert label(vs[4]) == "learning (2 of 6)"
