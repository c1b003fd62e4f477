"""The gate inside real pytest sessions (pytester + the real plugin): verdicts, updates, xdist, errors."""

from __future__ import annotations

import json
import re

import pytest
import yaml

pytest_plugins = ["pytester"]

BASE = "baselines/_noserver_.yaml"


@pytest.fixture
def gate(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    return pytester


def bench_test(pytester: pytest.Pytester, *checks: str, name: str = "test_b") -> None:
    body = "\n    ".join(checks)
    pytester.makepyfile(
        **{
            name: f"""
from pytest_llmbench.gate import Binomial, History, Relative, Spread, StdErr

def test_b(bench):
    {body}
"""
        }
    )


def baseline(pytester: pytest.Pytester) -> dict:
    return yaml.safe_load((pytester.path / BASE).read_text())


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--runner", "ci-a", "-p", "no:cacheprovider", *args)


THROUGHPUT = 'bench.check("output_throughput", {v}, noise=Relative(0.05))'


def test_new_then_update_then_pass(gate):
    bench_test(gate, THROUGHPUT.format(v=100.0))
    r = run(gate)
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(
        [
            "*llmbench verdicts*",
            "_noserver_ *test_b.py::test_b*output_throughput*new*",
            "llmbench: 0 of 1 checks judged; not judged: 1 new",
        ]
    )
    assert not (gate.path / BASE).exists()
    r = run(gate, "--update-baselines")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines([f"baselines written: {BASE} (1 entries)"])
    entry = baseline(gate)["runners"]["ci-a"]["test_b.py::test_b"]["output_throughput"]
    assert entry["value"] == 100 and entry["history"] == [100] and entry["direction"] == "higher"
    assert entry["noise"] == {"name": "Relative", "frac": 0.05}
    assert entry["provenance"]["runner"] == "ci-a" and re.fullmatch(r"\d{4}-\d\d-\d\d", entry["provenance"]["date"])
    bench_test(gate, THROUGHPUT.format(v=97.0))
    run(gate).assert_outcomes(passed=1)


def test_regression_fails_with_a_message_naming_metric_values_tolerance_and_rule(gate):
    bench_test(gate, THROUGHPUT.format(v=100.0))
    run(gate, "--update-baselines")
    bench_test(gate, THROUGHPUT.format(v=90.0))
    r = run(gate)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(
        [
            "*output_throughput REGRESSED: observed 90 vs baseline 100 (delta -10, -10.0%; tolerance 5, higher is "
            "better*rule: Relative 5%: fail if observed < 100 − 5%·100 = 95 ?config _noserver_, test "
            "test_b.py::test_b, runner ci-a?",
        ]
    )
    r.stdout.fnmatch_lines(
        [
            "*llmbench verdicts*",
            "*output_throughput*100*90*-10*-10.0%*5*REGRESSED",
            "llmbench: 1 of 1 checks judged (1 regressed)",
        ]
    )


def test_improvement_passes_and_suggests_an_update(gate):
    bench_test(gate, THROUGHPUT.format(v=100.0))
    run(gate, "--update-baselines")
    bench_test(gate, THROUGHPUT.format(v=120.0))
    r = run(gate)
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*output_throughput*+20.0%*improved — consider --update-baselines"])


def test_strict_baselines_fails_new(gate):
    bench_test(gate, THROUGHPUT.format(v=100.0))
    r = run(gate, "--strict-baselines")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*has no baseline*--strict-baselines makes a missing baseline a failure*"])


def test_update_keeps_history_and_update_new_only_adds(gate):
    for v in (100.0, 104.0, 101.0):
        bench_test(gate, THROUGHPUT.format(v=v))
        run(gate, "--update-baselines").assert_outcomes(passed=1)
    entry = baseline(gate)["runners"]["ci-a"]["test_b.py::test_b"]["output_throughput"]
    assert entry["history"] == [100, 104, 101] and entry["value"] == 101
    bench_test(gate, THROUGHPUT.format(v=99.0), 'bench.check("accept_length", [3.0, 3.5, 4.0])')
    run(gate, "--update-baselines=new").assert_outcomes(passed=1)
    data = baseline(gate)
    assert data["runners"]["ci-a"]["test_b.py::test_b"]["output_throughput"]["history"] == [100, 104, 101]
    al = data["shared"]["test_b.py::test_b"]["accept_length"]
    assert al["value"] == 3.5 and al["n"] == 3 and al["se"] == pytest.approx(0.288675)
    assert al["noise"] == {"name": "StdErr", "k": 2}  # the default for per-sample values; None params omitted


def test_history_noise_learns_from_accepted_runs(gate):
    for v in (168, 174, 176):
        bench_test(gate, f'bench.check("bfcl_passed", {v}, noise=History(k=2, min_runs=3, fallback=Spread(8)))')
        run(gate, "--update-baselines").assert_outcomes(passed=1)
    assert baseline(gate)["shared"]["test_b.py::test_b"]["bfcl_passed"]["history"] == [168, 174, 176]
    bench_test(gate, 'bench.check("bfcl_passed", 140, noise=History(k=2, min_runs=3, fallback=Spread(8)))')
    r = run(gate)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(
        ["*rule: History k=2 (prediction bound, t) over 3 runs (mean, SD 4.163): fail if observed < 172.7 − *"]
    )


def test_history_is_capped_when_updating(gate):
    hist = ", ".join(str(100 + i) for i in range(10))
    (gate.path / "baselines").mkdir()
    (gate.path / BASE).write_text(f"""
shared:
  test_b.py::test_b:
    accept_length: {{value: 109, direction: higher, history: [{hist}], noise: {{name: Relative, frac: 0.5}}}}
""")
    bench_test(gate, 'bench.check("accept_length", 111.0)')
    run(gate, "--update-baselines").assert_outcomes(passed=1)
    assert baseline(gate)["shared"]["test_b.py::test_b"]["accept_length"]["history"] == [*list(range(101, 110)), 111]


def test_binomial_count_with_n(gate):
    bench_test(gate, 'bench.check("gsm8k_correct", 1280, n=1319, noise=Binomial(alpha=0.01))')
    run(gate, "--update-baselines")
    bench_test(gate, 'bench.check("gsm8k_correct", 1240, n=1319, noise=Binomial(alpha=0.01))')
    r = run(gate)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*gsm8k_correct REGRESSED: observed 1240 vs baseline 1280*Fisher exact*of 1319*"])


def test_corrupt_baseline_is_a_usage_error_before_any_test_and_is_never_overwritten(gate):
    # changed with issue 9: read at session start (before any server starts), not by the first check
    (gate.path / "baselines").mkdir()
    (gate.path / BASE).write_text("runners: {ci-a: [\n")
    bench_test(gate, THROUGHPUT.format(v=100.0))
    r = run(gate, "--update-baselines")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "test_b.py" not in r.stdout.str()  # nothing ran
    r.stderr.fnmatch_lines([f"ERROR: baseline file *{BASE} is unreadable: invalid YAML*never overwrites it*"])
    assert (gate.path / BASE).read_text() == "runners: {ci-a: [\n"


def test_runner_profile_keys_hardware_bound_metrics_only(gate):
    bench_test(
        gate,
        THROUGHPUT.format(v=100.0),
        'bench.check("accept_length", 3.4, noise=Relative(0.05))',
        'bench.check("decode_ms", 5.0, noise=Relative(0.05), hardware_bound=False)',
    )
    run(gate, "--update-baselines").assert_outcomes(passed=1)
    data = baseline(gate)
    assert set(data["runners"]["ci-a"]["test_b.py::test_b"]) == {"output_throughput"}
    assert set(data["shared"]["test_b.py::test_b"]) == {"accept_length", "decode_ms"}
    r = gate.runpytest("--runner", "ci-b", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*output_throughput*new", "*accept_length*pass", "*decode_ms*pass"])
    r.stdout.fnmatch_lines(["llmbench gate: baselines *baselines, runner ci-b"])


def test_selection_changes_only_selected_entries_and_lists_the_rest(gate, monkeypatch):
    gate.makepyfile(
        test_two="""
from pytest_llmbench.gate import Relative
import os
V = float(os.environ.get("V", "100"))

def test_one(bench):
    bench.check("output_throughput", V, noise=Relative(0.05))

def test_two(bench):
    bench.check("output_throughput", V, noise=Relative(0.05))
"""
    )
    run(gate, "--update-baselines").assert_outcomes(passed=2)
    monkeypatch.setenv("V", "101")
    r = run(gate, "--update-baselines", "-k", "test_one")
    r.assert_outcomes(passed=1, deselected=1)
    r.stdout.fnmatch_lines(
        [
            "1 baseline entries were not checked in this run (kept):",
            f"  {BASE}: runners/ci-a test_two.py::test_two output_throughput",
        ]
    )
    tests = baseline(gate)["runners"]["ci-a"]
    assert tests["test_two.py::test_one"]["output_throughput"]["history"] == [100, 101]
    assert tests["test_two.py::test_two"]["output_throughput"]["history"] == [100]


def test_verdicts_reach_junit_and_results_jsonl(gate):
    bench_test(gate, THROUGHPUT.format(v=100.0))
    r = run(gate, "--junitxml=out.xml", "--results-dir=res")
    r.assert_outcomes(passed=1)
    xml = (gate.path / "out.xml").read_text()
    assert 'name="llmbench.verdict.output_throughput" value="new"' in xml
    lines = [ln for f in (gate.path / "res").glob("results*.jsonl") for ln in f.read_text().splitlines()]
    assert any('"record": "verdict"' in ln and '"metric": "output_throughput"' in ln for ln in lines)


def test_xdist_workers_send_updates_to_the_controller_which_writes_once(gate):
    gate.makepyfile(
        test_many="""
import pytest
from pytest_llmbench.gate import Relative

@pytest.mark.parametrize("i", range(6))
def test_m(bench, i):
    bench.check("output_throughput", 100.0 + i, noise=Relative(0.05))
    bench.check("accept_length", 3.0 + i / 10, noise=Relative(0.05))
"""
    )
    r = gate.runpytest_inprocess("-n", "2", "--runner", "ci-a", "-p", "no:cacheprovider", "--update-baselines")
    r.assert_outcomes(passed=6)
    r.stdout.fnmatch_lines([f"baselines written: {BASE} (12 entries)"])
    data = baseline(gate)
    assert {k: v["output_throughput"]["value"] for k, v in data["runners"]["ci-a"].items()} == {
        f"test_many.py::test_m[{i}]": 100 + i for i in range(6)
    }
    assert len(data["shared"]) == 6
    assert sorted(p.name for p in (gate.path / "baselines").iterdir()) == ["_noserver_.yaml"]
    r.stdout.fnmatch_lines(["*llmbench verdicts*", "llmbench: 0 of 12 checks judged; not judged: 12 new"])


def test_written_baseline_file(gate, snapshot):
    bench_test(
        gate,
        THROUGHPUT.format(v=148.123456789),
        'bench.check("accept_length", [3.1, 3.4, 3.9, 3.2])',
        'bench.check("bfcl_passed", 171, n=205, noise=Binomial(alpha=0.01))',
        'bench.check("failed", 0, noise=Spread(0))',
    )
    run(gate, "--update-baselines").assert_outcomes(passed=1)
    text = re.sub(r"date: '\d{4}-\d\d-\d\d'", "date: 'DATE'", (gate.path / BASE).read_text())
    text = re.sub(r"host: .*", "host: HOST", text)
    assert text == snapshot


# --- issue 10: every check judged, the error budget, update semantics ------------------------------------


def record(gate, *checks):
    bench_test(gate, *checks)
    run(gate, "--update-baselines").assert_outcomes(passed=1)


def test_every_check_is_judged_and_the_test_fails_once_listing_all_regressions(gate):
    """Defect at 8fab55e: the first regressed check stopped the test; later checks were never judged."""
    checks = [
        'bench.check("output_throughput", {a}, noise=Relative(0.05))',
        'bench.check("median_ttft_ms", {b}, noise=Relative(0.05))',
        'bench.check("accept_length", {c}, noise=Relative(0.05))',
        'print("after the checks")',
    ]
    record(gate, *[c.format(a=100.0, b=50.0, c=3.0) for c in checks])
    bench_test(gate, *[c.format(a=80.0, b=70.0, c=3.0) for c in checks])
    r = run(gate, "-s", "--junitxml=out.xml", "--results-dir=res")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(
        ["*after the checks*", "*2 regressed check(s):", "*output_throughput REGRESSED*", "*median_ttft_ms REGRESSED*"]
    )
    r.stdout.fnmatch_lines(
        [
            "*llmbench verdicts*",
            "*output_throughput*REGRESSED",
            "*median_ttft_ms*REGRESSED",
            "*accept_length*pass",
            "llmbench: 3 of 3 checks judged (2 regressed, 1 pass)",
        ]
    )
    xml = (gate.path / "out.xml").read_text()
    assert xml.count("<failure") == 1 and "2 regressed check(s)" in xml
    assert 'name="llmbench.verdict.median_ttft_ms" value="REGRESSED"' in xml
    recs = [json.loads(ln) for f in (gate.path / "res").glob("results*.jsonl") for ln in f.read_text().splitlines()]
    assert sorted(r["metric"] for r in recs if r["record"] == "verdict") == [
        "accept_length",
        "median_ttft_ms",
        "output_throughput",
    ]


def test_soft_failure_under_xdist(gate):
    checks = [
        'bench.check("output_throughput", {a}, noise=Relative(0.05))',
        'bench.check("median_ttft_ms", {b}, noise=Relative(0.05))',
    ]
    record(gate, *[c.format(a=100.0, b=50.0) for c in checks])
    bench_test(gate, *[c.format(a=80.0, b=70.0) for c in checks])
    r = gate.runpytest_inprocess("-n", "2", "--runner", "ci-a", "-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*2 regressed check(s):*"])
    r.stdout.fnmatch_lines(["*llmbench verdicts*", "llmbench: 2 of 2 checks judged (2 regressed)"])


STDERR = 'bench.check("accept_length", {v}, se=0.1, n=30, noise=StdErr(k=2))'


def test_p_and_q_reach_results_jsonl_and_the_table(gate):
    record(gate, STDERR.format(v=3.4))
    bench_test(gate, STDERR.format(v=3.0))
    r = run(gate, "--results-dir=res")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(
        [
            "*accept_length*REGRESSED: observed 3 vs baseline 3.4*p=*",
            "*REGRESSED",
            "error budget: quality α=0.02 over 1 gates (Holm per family*",
        ]
    )
    recs = [json.loads(ln) for f in (gate.path / "res").glob("results*.jsonl") for ln in f.read_text().splitlines()]
    v = next(x for x in recs if x["record"] == "verdict")
    assert v["p_value"] < 0.01 and v["q_value"] == pytest.approx(v["p_value"]) and v["family"] == "quality"
    assert next(x for x in recs if x["record"] == "check")["q_value"] is None
    budget = next(x for x in recs if x["record"] == "gate_budget")
    assert budget["counted"]["quality"] == 1 and budget["alphas"]["quality"] == 0.02


def gates(n, v):
    return "\n".join(f'    bench.check("m{i}_accuracy", {v}, se=0.1, n=30, noise=StdErr(k=2))' for i in range(n))


def test_budget_counts_gates_up_front_and_holm_flags_at_suite_level(gate):
    """Ten gates at α=0.05: a test fails at p ≤ 0.005; Holm's later steps still flag the suite."""
    gate.makepyfile(
        test_g=f"""
import os
from pytest_llmbench.gate import StdErr
V = float(os.environ.get("V", "3.4"))

def test_a(bench):
    bench.check("m_accuracy", 3.4 - float(os.environ.get("DROP_A", "0")), se=0.1, n=30, noise=StdErr(k=2))

def test_b(bench):
{gates(9, "V")}
"""
    )
    run(gate, "--update-baselines").assert_outcomes(passed=2)
    # test_a: z = 0.29/0.1414 = 2.05 → p ≈ 0.025: beyond k=2 but above 0.05/10 → its test passes.
    # test_b: 9 gates with z = 0.6/0.1414 → p ≈ 1e-5: they fail the test; Holm then reaches test_a's p·1.
    r = gate.runpytest("--runner", "ci-a", "-p", "no:cacheprovider", "--gate-alpha", "0.05", "--results-dir=res")
    r.assert_outcomes(passed=2)
    assert r.ret == 0
    import os

    os.environ["DROP_A"] = "0.29"
    os.environ["V"] = "2.8"
    try:
        r = gate.runpytest("--runner", "ci-a", "-p", "no:cacheprovider", "--gate-alpha", "0.05")
    finally:
        del os.environ["DROP_A"], os.environ["V"]
    r.assert_outcomes(passed=1, failed=1)
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.stdout.fnmatch_lines(["*test_g.py::test_a  m_accuracy*0.022   0.022  REGRESSED"])
    r.stdout.fnmatch_lines(
        [
            "error budget: quality α=0.05 over 10 gates*",
            "REGRESSED at suite level (test test_g.py::test_a passed; Holm across the quality "
            "family)*within the suite's error budget; Holm q=0.022 ≤ α=0.05: REGRESSED at suite "
            "level*",
        ]
    )


def test_comparisons_of_the_session_share_the_gates_budget(gate, monkeypatch):
    """Issue 54: stored checks and a session's comparisons of one family spend its alpha once. A conftest stands
    in for compare/session.py's side of the seam (suite.join_gate_budget): 3 quality comparisons counted up front
    and their p-values. The stored check at p ≈ 0.020 (z = 2.05) failed its test at α=0.05 over 1 gate; over the
    4 counted its level is 0.0125 and it passes, and Holm's one pass gives it q = 3p ≈ 0.060 beside p-values
    (0.001, 0.2, 0.3) and q = p beside (0.001, 0.002, 0.003): REGRESSED at suite level then."""
    record(gate, STDERR.format(v=3.4))
    bench_test(gate, STDERR.format(v=3.11))
    run(gate, "--gate-alpha", "0.05").assert_outcomes(failed=1)  # alone in its family: p ≤ 0.05 fails the test
    gate.makeconftest(
        """
import os
import pytest
from pytest_llmbench import stash

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    budget = session.config.stash[stash.GATE].budget
    budget.compared["quality"] = 3
    p = [float(x) for x in os.environ["COMPARISON_P"].split(",")]
    budget.sources["comparisons"] = lambda: {"quality": p}
"""
    )

    def records(folder: str, kind: str) -> list[dict]:
        lines = (gate.path / folder / "results.jsonl").read_text().splitlines()
        return [r for r in map(json.loads, lines) if r["record"] == kind]

    monkeypatch.setenv("COMPARISON_P", "0.001,0.2,0.3")
    r = run(gate, "--gate-alpha", "0.05", "--results-dir=res")
    r.assert_outcomes(passed=1)
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(["error budget: quality α=0.05 over 1 gates + 3 comparisons*"])
    ((budget,), (verdict,)) = records("res", "gate_budget"), records("res", "verdict")
    assert budget["compared"]["quality"] == 3 and budget["counted"]["quality"] == 1
    assert 0.0125 < verdict["p_value"] < 0.05
    assert verdict["q_value"] == pytest.approx(3 * verdict["p_value"]) and verdict["status"] == "pass"
    monkeypatch.setenv("COMPARISON_P", "0.001,0.002,0.003")
    r = run(gate, "--gate-alpha", "0.05", "--results-dir=res2")
    assert r.ret == pytest.ExitCode.TESTS_FAILED  # its test passed; the session fails at suite level
    (verdict,) = records("res2", "verdict")
    assert verdict["q_value"] == pytest.approx(verdict["p_value"]) and verdict["status"] == "REGRESSED"


def test_budget_off_judges_each_gate_at_its_own_level(gate):
    record(gate, STDERR.format(v=3.4))
    bench_test(gate, STDERR.format(v=3.1))  # z = 2.12: beyond k=2 with p ≈ 0.018 (> α=0.01 of one gate)
    run(gate, "--gate-alpha", "0.01").assert_outcomes(passed=1)
    run(gate, "--gate-alpha", "off").assert_outcomes(failed=1)


def test_a_nan_se_argument_is_an_error_naming_the_argument(gate):
    """Defect at 8fab55e: se=float('nan') made the tolerance NaN and the check passed anything."""
    record(gate, STDERR.format(v=3.4))
    bench_test(gate, 'bench.check("accept_length", 0.1, se=float("nan"), n=30, noise=StdErr(k=2))')
    r = run(gate)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*bench.check('accept_length'): se= must be a finite number >= 0, got nan*"])
    bench_test(gate, 'bench.check("accept_length", 3.4, se=-1, n=30)')
    run(gate).stdout.fnmatch_lines(["*se= must be a finite number >= 0, got -1.0*"])


def test_truncated_baseline_is_a_usage_error_before_tests_run(gate):
    record(gate, THROUGHPUT.format(v=100.0), 'bench.check("failed", 0, noise=Spread(1))')
    path = gate.path / BASE
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    r = run(gate)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: baseline file *_noserver_.yaml is unreadable: *cut short*"])


def test_update_accept_writes_a_regressed_value_but_fails_and_restarts_the_history(gate):
    """Defect at 8fab55e: an automatic accept wrote REGRESSED values into the history silently."""
    for v in (100.0, 101.0):
        record(gate, THROUGHPUT.format(v=v))
    bench_test(gate, THROUGHPUT.format(v=80.0))
    r = run(gate, "--update-baselines=accept")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*1 REGRESSED value(s) written as the new baseline (history restarted*"])
    entry = baseline(gate)["runners"]["ci-a"]["test_b.py::test_b"]["output_throughput"]
    assert entry["value"] == 80 and entry["history"] == [80]


def test_recording_shows_a_regressed_value_keeps_it_and_exits_0(gate):
    """Issue 21: recording runs 2 and 3 of 3 failed and restarted the history; recording is the user's
    decision, so every recorded run exits 0 and adds its value, and the table still says REGRESSED."""
    for v in (100.0, 101.0):
        record(gate, THROUGHPUT.format(v=v))
    bench_test(gate, THROUGHPUT.format(v=80.0))
    r = run(gate, "--update-baselines=all")
    assert r.ret == 0
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(
        [
            "*output_throughput*REGRESSED (recorded, not failing)",
            "llmbench: 1 of 1 checks judged (1 regressed)",
            "recording (--update-baselines=all): the REGRESSED rows are shown and recorded*",
        ]
    )
    assert baseline(gate)["runners"]["ci-a"]["test_b.py::test_b"]["output_throughput"]["history"] == [100, 101, 80]


def test_refresh_entries_are_replaced_not_appended(gate):
    """Defect at 8fab55e: a published one-run figure (refresh: true) stayed in the history."""
    (gate.path / "baselines").mkdir()
    (gate.path / BASE).write_text("""
shared:
  test_b.py::test_b:
    bfcl_passed: {value: 190, direction: higher, history: [190], noise: {name: History, k: 3},
                  provenance: {source: 'published, one run', refresh: true}}
""")
    bench_test(gate, 'bench.check("bfcl_passed", 170, noise=History(k=3, fallback=Spread(50)))')
    run(gate, "--update-baselines").assert_outcomes(passed=1)
    entry = baseline(gate)["shared"]["test_b.py::test_b"]["bfcl_passed"]
    assert entry["history"] == [170] and "refresh" not in entry["provenance"]


CUSTOM = """
from dataclasses import dataclass
from pytest_llmbench.gate import NoiseModel
from pytest_llmbench.gate.noise.relative import Relative

@dataclass(frozen=True)
class Twice(NoiseModel):
    frac: float = 0.05
    name = "Twice"
    gives_p = False

    def verdict(self, baseline, observed, direction):
        return Relative(2 * self.frac).verdict(baseline, observed, direction)
"""


@pytest.mark.parametrize("xdist", [False, True])
def test_custom_noise_model_from_a_conftest_survives_update(gate, xdist):
    """Defect at 8fab55e: --update-baselines failed at session end with "unknown noise model"."""
    gate.makeconftest(CUSTOM)
    gate.makepyfile(
        test_b="""
from conftest import Twice

def test_b(bench):
    bench.check("output_throughput", 100.0, noise=Twice(0.05))
"""
    )
    args = ["-n", "2"] if xdist else []
    r = gate.runpytest_inprocess(*args, "--runner", "ci-a", "-p", "no:cacheprovider", "--update-baselines")
    r.assert_outcomes(passed=1)
    assert baseline(gate)["runners"]["ci-a"]["test_b.py::test_b"]["output_throughput"]["noise"] == {
        "name": "Twice",
        "frac": 0.05,
    }
    gate.makepyfile(
        test_b="""
def test_b(bench):
    bench.check("output_throughput", 92.0)  # the stored model: 2·5% band
"""
    )
    gate.runpytest_inprocess(*args, "--runner", "ci-a", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_reference_check_is_judged_against_a_value_of_this_run_and_never_written(gate):
    gate.makepyfile(
        test_b="""
from pytest_llmbench.gate import Relative

def test_b(bench):
    bench.check("paired_accuracy_gap", -0.2, noise=Relative(0.5), reference=0.1, direction="higher")
"""
    )
    r = run(gate, "--update-baselines")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*paired_accuracy_gap REGRESSED: observed -0.2 vs baseline 0.1*"])
    assert not (gate.path / BASE).exists()


def test_timing_entry_from_another_machine_is_not_comparable_instead_of_a_verdict(gate):
    """Issue 10/21: a machine 2.7x faster said "improved +135…+261%" on all 27 timing checks."""
    from pytest_llmbench.gate.machine import fingerprint
    from pytest_llmbench.gate.runner import detect

    here = json.dumps(fingerprint(detect()))
    (gate.path / "baselines").mkdir()
    entry = """
runners:
  ci-a:
    test_b.py::test_b:
      output_throughput: {{value: 100, direction: higher, noise: {{name: Relative, frac: 0.05}},
                          provenance: {{machine: {machine}}}}}
# end: 1 entry
"""
    (gate.path / BASE).write_text(entry.format(machine='{cpu: "Some Other CPU", cores: 64}'))
    bench_test(gate, THROUGHPUT.format(v=270.0))
    r = run(gate)
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(
        [
            "*output_throughput*100*270*not comparable",
            "llmbench: 0 of 1 checks judged; not judged: 1 not comparable",
            "  not comparable (1 checks: _noserver_ test_b.py::test_b): recorded on another machine "
            "(cpu 'Some Other CPU' there, *; cores 64 there, *): re-record on this machine*",
        ]
    )
    assert run(gate, "--strict-baselines").ret == 0  # not comparable is not "new"
    (gate.path / BASE).write_text(entry.format(machine=here))
    run(gate).stdout.fnmatch_lines(["*output_throughput*improved*"])


def test_budget_under_xdist_controller_adjusts_and_writes_p_and_q(gate, monkeypatch):
    gate.makepyfile(
        test_x="""
import os
import pytest
from pytest_llmbench.gate import StdErr
DROP = float(os.environ.get("DROP", "0"))

@pytest.mark.parametrize("i", range(4))
def test_x(bench, i):
    bench.check("accept_length", 3.4 - (DROP if i == 0 else 0.0), se=0.1, n=30, noise=StdErr(k=2))
"""
    )
    args = ["-n", "2", "--runner", "ci-a", "-p", "no:cacheprovider"]
    gate.runpytest_inprocess(*args, "--update-baselines").assert_outcomes(passed=4)
    monkeypatch.setenv("DROP", "0.6")
    r = gate.runpytest_inprocess(*args, "--results-dir=res")
    r.assert_outcomes(passed=3, failed=1)
    r.stdout.fnmatch_lines(["*accept_length*REGRESSED", "error budget: quality α=0.02 over 4 gates*"])
    recs = [json.loads(ln) for f in (gate.path / "res").glob("results*.jsonl") for ln in f.read_text().splitlines()]
    final = [x for x in recs if x["record"] == "verdict"]
    assert len(final) == 4 and all(x["q_value"] is not None for x in final)
    assert next(x for x in recs if x["record"] == "gate_budget")["counted"]["quality"] == 4


def test_a_test_that_fails_on_its_own_also_lists_its_regressed_checks(gate):
    record(gate, THROUGHPUT.format(v=100.0))
    bench_test(gate, THROUGHPUT.format(v=80.0), 'assert 1 == 2, "the bench itself broke"')
    r = run(gate)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(
        [
            "*the bench itself broke*",
            "*llmbench regressed checks*",
            "*1 regressed check(s):*",
            "*output_throughput REGRESSED*",
        ]
    )
