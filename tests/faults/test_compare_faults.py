"""Faults in a reference-vs-candidate comparison: an arm's real llama-server killed between rounds."""

from __future__ import annotations

import pytest

from .conftest import assert_nothing_left_running, records

pytestmark = pytest.mark.integration

#: A sink that kills the candidate arm's server (the test's llm_server) once 4 judged blocks are written.
KILL_CANDIDATE = """
import os, signal

BLOCKS = []

def pytest_llmbench_record(config, record, item):
    if record["record"] == "comparison_block" and not record["warmup"]:
        BLOCKS.append(record)
        if len(BLOCKS) == 4:
            os.killpg(item.funcargs["llm_server"].handle.pgid, signal.SIGKILL)
"""


def test_an_arms_server_killed_mid_comparison_fails_naming_the_arm_not_a_ratio_of_zeros(pytester: pytest.Pytester):
    """The fault battery (experiments/faults/battery.py) found it: the rounds went on against the dead arm,
    every request failed, and the pilot's judging died of ``ValueError: output_throughput: a ratio needs
    positive values … min candidate 0`` with a traceback through compare/stats.py. Now the first block on
    the dead server ends the comparison with the server, its exit and its log tail, naming the arm."""
    from pytest_llmbench.engines.llamacpp import llamacpp_binary

    from ..conftest import short_context

    pytester.makeconftest(KILL_CANDIDATE)
    pytester.makepyfile(
        test_bench="""
from pytest_llmbench import Scenario

def test_serving(llm_server, bench):
    bench.run(Scenario("tiny", dataset="random", input_len=16, output_len=8, num_prompts=2, concurrency=1, warmup=1,
                       seed=1))
"""
    )
    folder = str(llamacpp_binary().parent)
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--llmbench-configs={short_context()}",
        f"--results-dir={out}",
        "-k",
        "smol-nospec",
        f"--llmbench-reference-bin={folder}",
        f"--llmbench-candidate-bin={folder}",
        "--llmbench-max-rounds=16",
        "-o",
        "llmbench_compare_restart_rounds=0",
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-2500:]
    assert "ValueError" not in text and "Traceback" not in text, text[-2500:]
    result.stdout.fnmatch_lines(
        [
            "*server smol-nospec exited (code -9, SIGKILL*during scenario tiny (candidate arm)*",
            "*--- last * lines of *server.log ---*",
        ]
    )
    assert len([b for b in records(out, "comparison_block") if not b["warmup"]]) >= 4, "the blocks played are kept"
    assert_nothing_left_running(out)
