"""Options of a comparison session: margins from ini, errors that name the option (pytester, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.compare.options import parse_margins

pytest_plugins = ["pytester"]
CPU_YAML = Path(__file__).resolve().parents[2] / "benches" / "configs" / "cpu.yaml"
BENCH = """
import pytest

@pytest.mark.llm_configs("nospec")
def test_serving(llm_server, bench):
    pass
"""


def test_margins_from_ini_lines():
    assert parse_margins(["output_throughput=0.05", "accept_length=0.2, median_ttft_ms=0.1"]) == {
        "output_throughput": 0.05, "accept_length": 0.2, "median_ttft_ms": 0.1}
    with pytest.raises(pytest.UsageError, match="'tput' is not 'metric=number'"):
        parse_margins(["tput"])
    with pytest.raises(pytest.UsageError, match="a margin is ≥ 0"):
        parse_margins(["tput=-1"])


@pytest.mark.parametrize("args, message", [
    (["--llmbench-reference-bin", "/no/such/dir"], "--llmbench-reference-bin /no/such/dir: no such folder"),
    (["--llmbench-reference-image", "sglang:old"], "not docker"),
    (["--llmbench-reference-args", "-t 1", "--llmbench-max-rounds", "1"], "at least 2 rounds"),
    (["--llmbench-reference-args", "-t 1", "--llmbench-compare-alpha", "2"], "between 0 and 1"),
])
def test_bad_options_stop_the_session_before_any_server(pytester: pytest.Pytester, args, message):
    pytester.makepyfile(test_bench=BENCH)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--llmbench-configs", str(CPU_YAML),
                                           "--results-dir", "out", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])
    assert not (pytester.path / "out").exists()  # nothing started, nothing written


def test_no_compare_option_leaves_the_session_alone(pytester: pytest.Pytester):
    pytester.makepyfile(test_bench=BENCH)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--llmbench-configs", str(CPU_YAML),
                                           "--collect-only", "-q")
    assert result.ret == 0
    assert "llmbench compare" not in result.stdout.str()


def test_compare_header_names_the_arms(pytester: pytest.Pytester):
    pytester.makepyfile(test_bench=BENCH)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--llmbench-configs", str(CPU_YAML),
                                           "--collect-only", "-q", "-k", "smol-nospec",
                                           "--llmbench-reference-args", "-t 1", "--gate-alpha", "0.03")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["llmbench compare: smol-nospec: reference args -t 1 vs candidate installed build",
                                 "llmbench compare: rounds 3–10, per-comparison α timing=0.01, quality=0.03, "
                                 "decisions=0.03"])
