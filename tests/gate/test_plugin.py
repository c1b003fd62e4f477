"""The gate inside real pytest sessions (pytester + the real plugin): verdicts, updates, xdist, errors."""

from __future__ import annotations

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
    pytester.makepyfile(**{name: f"""
from pytest_llmbench.gate import Binomial, History, Relative, Spread, StdErr

def test_b(bench):
    {body}
"""})


def baseline(pytester: pytest.Pytester) -> dict:
    return yaml.safe_load((pytester.path / BASE).read_text())


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--runner", "ci-a", "-p", "no:cacheprovider", *args)


THROUGHPUT = 'bench.check("output_throughput", {v}, noise=Relative(0.05))'


def test_new_then_update_then_pass(gate):
    bench_test(gate, THROUGHPUT.format(v=100.0))
    r = run(gate)
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*llmbench verdicts*", "_noserver_ *test_b.py::test_b*output_throughput*new*",
                            "1 new"])
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
    r.stdout.fnmatch_lines([
        "*output_throughput REGRESSED: observed 90 vs baseline 100 (delta -10, -10.0%; tolerance 5, higher is "
        "better*rule: Relative 5%: fail if observed < 100 − 5%·100 = 95 ?config _noserver_, test "
        "test_b.py::test_b, runner ci-a?",
    ])
    r.stdout.fnmatch_lines(["*llmbench verdicts*", "*output_throughput*100*90*-10*-10.0%*5*REGRESSED", "1 regressed"])


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
        bench_test(gate, f'bench.check("bfcl_passed", {v}, noise=History(k=2, fallback=Spread(8)))')
        run(gate, "--update-baselines").assert_outcomes(passed=1)
    assert baseline(gate)["shared"]["test_b.py::test_b"]["bfcl_passed"]["history"] == [168, 174, 176]
    bench_test(gate, 'bench.check("bfcl_passed", 140, noise=History(k=2, fallback=Spread(8)))')
    r = run(gate)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*rule: History k=2 (prediction bound, t) over 3 runs (mean, SD 4.163): "
                            "fail if observed < 172.7 − *"])


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
    assert baseline(gate)["shared"]["test_b.py::test_b"]["accept_length"]["history"] == list(range(101, 110)) + [111]


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
    bench_test(gate, THROUGHPUT.format(v=100.0), 'bench.check("accept_length", 3.4, noise=Relative(0.05))',
               'bench.check("decode_ms", 5.0, noise=Relative(0.05), hardware_bound=False)')
    run(gate, "--update-baselines").assert_outcomes(passed=1)
    data = baseline(gate)
    assert set(data["runners"]["ci-a"]["test_b.py::test_b"]) == {"output_throughput"}
    assert set(data["shared"]["test_b.py::test_b"]) == {"accept_length", "decode_ms"}
    r = gate.runpytest("--runner", "ci-b", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*output_throughput*new", "*accept_length*pass", "*decode_ms*pass"])
    r.stdout.fnmatch_lines(["llmbench gate: baselines *baselines, runner ci-b"])


def test_selection_changes_only_selected_entries_and_lists_the_rest(gate, monkeypatch):
    gate.makepyfile(test_two="""
from pytest_llmbench.gate import Relative
import os
V = float(os.environ.get("V", "100"))

def test_one(bench):
    bench.check("output_throughput", V, noise=Relative(0.05))

def test_two(bench):
    bench.check("output_throughput", V, noise=Relative(0.05))
""")
    run(gate, "--update-baselines").assert_outcomes(passed=2)
    monkeypatch.setenv("V", "101")
    r = run(gate, "--update-baselines", "-k", "test_one")
    r.assert_outcomes(passed=1, deselected=1)
    r.stdout.fnmatch_lines(["1 baseline entries were not checked in this run (kept):",
                            f"  {BASE}: runners/ci-a test_two.py::test_two output_throughput"])
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
    gate.makepyfile(test_many="""
import pytest
from pytest_llmbench.gate import Relative

@pytest.mark.parametrize("i", range(6))
def test_m(bench, i):
    bench.check("output_throughput", 100.0 + i, noise=Relative(0.05))
    bench.check("accept_length", 3.0 + i / 10, noise=Relative(0.05))
""")
    r = gate.runpytest_subprocess("-n", "2", "--runner", "ci-a", "-p", "no:cacheprovider", "--update-baselines")
    r.assert_outcomes(passed=6)
    r.stdout.fnmatch_lines([f"baselines written: {BASE} (12 entries)"])
    data = baseline(gate)
    assert {k: v["output_throughput"]["value"] for k, v in data["runners"]["ci-a"].items()} == {
        f"test_many.py::test_m[{i}]": 100 + i for i in range(6)}
    assert len(data["shared"]) == 6
    assert sorted(p.name for p in (gate.path / "baselines").iterdir()) == ["_noserver_.yaml"]
    r.stdout.fnmatch_lines(["*llmbench verdicts*", "12 new"])


def test_written_baseline_file(gate, snapshot):
    bench_test(gate, THROUGHPUT.format(v=148.123456789), 'bench.check("accept_length", [3.1, 3.4, 3.9, 3.2])',
               'bench.check("bfcl_passed", 171, n=205, noise=Binomial(alpha=0.01))',
               'bench.check("failed", 0, noise=Spread(0))')
    run(gate, "--update-baselines").assert_outcomes(passed=1)
    text = re.sub(r"date: '\d{4}-\d\d-\d\d'", "date: 'DATE'", (gate.path / BASE).read_text())
    assert text == snapshot
