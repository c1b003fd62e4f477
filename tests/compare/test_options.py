"""Options of a comparison session: sizes from ini, the design, errors that name the option (pytester, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.compare.options import parse_sizes

pytest_plugins = ["pytester"]
CPU_YAML = Path(__file__).resolve().parents[2] / "benches" / "configs" / "cpu.yaml"
BENCH = """
import pytest

@pytest.mark.llm_configs("nospec")
def test_serving(llm_server, bench):
    pass
"""


def test_sizes_from_ini_lines():
    assert parse_sizes(["output_throughput=5%", "accept_length=0.2, median_ttft_ms=0.1"], "k") == {
        "output_throughput": "5%",
        "accept_length": "0.2",
        "median_ttft_ms": "0.1",
    }
    with pytest.raises(pytest.UsageError, match="ini llmbench_compare_detect: 'tput' is not 'metric=value'"):
        parse_sizes(["tput"], "llmbench_compare_detect")
    with pytest.raises(pytest.UsageError, match=r"ini llmbench_compare_ignore: 'tput=-1': .*must be >= 0"):
        parse_sizes(["tput=-1"], "llmbench_compare_ignore")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--llmbench-reference-bin", "/no/such/dir"], "--llmbench-reference-bin /no/such/dir: no such folder"),
        (["--llmbench-reference-image", "sglang:old"], "not docker"),
        (
            ["--llmbench-reference-args", "-t 1", "--llmbench-max-rounds", "1"],
            "--llmbench-max-rounds: 1 — must be at least 2",
        ),
        (["--llmbench-reference-args", "-t 1", "--llmbench-compare-alpha", "2"], "between 0 and 0.5"),
        (
            ["--llmbench-reference-args", "-t 1", "--llmbench-compare-budget", "soon"],
            "--llmbench-compare-budget: 'soon' is not",
        ),
        (
            ["--llmbench-reference-args", "-t 1", "--llmbench-compare-budget", "chat=300"],
            "--llmbench-compare-budget: 'chat=300': the one key is 'scenario'",
        ),
        (
            ["--llmbench-reference-args", "-t 1", "--llmbench-compare-budget", "scenario=-5"],
            "--llmbench-compare-budget scenario=: '-5' must be > 0 seconds",
        ),
        (
            ["--llmbench-reference-args", "-t 1", "-o", "llmbench_compare_noise=offset=2% round=x"],
            "ini llmbench_compare_noise: 'round=x' is not 'offset=SD' or 'round=SD'",
        ),
        (
            ["--llmbench-reference-args", "-t 1", "--llmbench-block-prompts", "0"],
            "--llmbench-block-prompts: 0 — must be at least 1",
        ),
        (
            ["--llmbench-reference-args", "-t 1", "-o", "llmbench_compare_restart_rounds=3"],
            "ini llmbench_compare_restart_rounds: 3 — must be even",
        ),
        (
            ["--llmbench-reference-args", "-t 1", "-o", "llmbench_compare_pilot=2"],
            "ini llmbench_compare_pilot: 2 — must be at least 4",
        ),
        (
            ["--llmbench-reference-args", "-t 1", "-o", "llmbench_compare_ignore=output_throughput=5%"],
            "sizes for 'output_throughput': need 0 <= ignore < detect",
        ),
    ],
)
def test_bad_options_stop_the_session_before_any_server(pytester: pytest.Pytester, args, message):
    pytester.makepyfile(test_bench=BENCH)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--llmbench-configs", str(CPU_YAML), "--results-dir", "out", *args
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])
    assert not (pytester.path / "out").exists()  # nothing started, nothing written


def test_no_compare_option_leaves_the_session_alone(pytester: pytest.Pytester):
    pytester.makepyfile(test_bench=BENCH)
    result = pytester.runpytest("-p", "no:cacheprovider", "--llmbench-configs", str(CPU_YAML), "--collect-only", "-q")
    assert result.ret == 0
    assert "llmbench compare" not in result.stdout.str()


def _collect_with_budget(pytester: pytest.Pytester, bench: str) -> pytest.RunResult:
    """--collect-only of ``bench`` as a comparison (reference args -t 1) under --gate-alpha 0.03."""
    pytester.makepyfile(test_bench=bench)
    result = pytester.runpytest(  # in-process: no server starts, a subprocess costs ~2.5 s of imports
        "-p",
        "no:cacheprovider",
        "--llmbench-configs",
        str(CPU_YAML),
        "--collect-only",
        "-q",
        "-k",
        "smol-nospec",
        "--llmbench-reference-args",
        "-t 1",
        "--gate-alpha",
        "0.03",
    )
    assert result.ret == 0
    return result


def test_compare_header_names_the_arms(pytester: pytest.Pytester):
    result = _collect_with_budget(pytester, BENCH)
    result.stdout.fnmatch_lines(
        [
            "llmbench compare: smol-nospec: reference args -t 1 vs candidate installed build",
            "llmbench compare: 1 warm-up round(s) not judged, units of a fresh pair of servers whose rounds are "
            "chosen by cost once the first pair is timed, a pilot of up to 12 units, then the units for 95% power at each metric's detect size (at most 400 rounds, 300 s per "
            "scenario), 2 prompts per block; per-comparison α timing=0.03, quality=0.03, "
            "decisions=0.03",  # a test that checks nothing makes no comparison: the whole budget is left
        ]
    )


CHECKS = """
import pytest

@pytest.mark.llm_configs("nospec")
def test_serving(llm_server, bench):
    m = bench.run(None).metrics
    bench.check("output_throughput", m["output_throughput"])
    bench.check("median_ttft_ms", m["median_ttft_ms"])
    bench.check("median_tpot_ms", m["median_tpot_ms"])
    bench.check("answers_right", 5.0)  # not a serving metric: the stored-baseline gate's, not counted
"""


def test_alpha_is_the_budget_over_every_serving_check_the_selected_tests_make(pytester: pytest.Pytester):
    """Issue 37 finding 4: benches/test_serving_cpu.py checks three timing metrics and two (the deciding
    ones) were counted, so the family could spend 1.5× its budget before Holm ran. The count now reads
    each test's ``bench.check`` calls: 0.03 over 3 timing comparisons."""
    result = _collect_with_budget(pytester, CHECKS)
    result.stdout.fnmatch_lines(["*per-comparison α timing=0.01, quality=0.03, decisions=0.03"])


@pytest.mark.parametrize("line", ["ttft_ms=10%", "p99_ttft=5%", "throughput=3%"])
def test_an_ini_size_that_names_no_comparison_metric_is_a_usage_error(line):
    """Issue 37 finding 8: ``ttft_ms=10%`` passed and applied to nothing; a latency word applies to all."""
    with pytest.raises(
        pytest.UsageError, match=rf"ini llmbench_compare_detect: '{line}': .* is not a metric a comparison judges"
    ):
        parse_sizes([line], "llmbench_compare_detect")
    assert parse_sizes(["ttft=10%"], "llmbench_compare_detect") == {"ttft": "10%"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--llmbench-compare-budget", "20m"], "1200 s for the session's scenarios"),
        (["--llmbench-compare-budget", "scenario=120"], "120 s per scenario"),
        (["--llmbench-compare-budget", "none"], "no time limit per scenario"),
        (["-o", "llmbench_compare_budget=90"], "90 s per scenario"),
    ],
)
def test_the_budget_is_the_sessions_or_each_scenarios(pytester: pytest.Pytester, args, says):
    pytester.makepyfile(test_bench=BENCH)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--llmbench-configs", str(CPU_YAML), "--collect-only", "-q", "-k", "smol-nospec",
        "--llmbench-reference-args", "-t 1", *args,
    )  # fmt: skip
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"llmbench compare: * rounds, {says}), *"])
