"""A secret in a config's env and args never reaches any output: terminal, results.jsonl, server logs,
JUnit XML — neither for a server that runs nor for one that fails to start (its command line and log
tail are in the error)."""

from __future__ import annotations

import pytest

from .conftest import smol_configs

pytestmark = pytest.mark.integration

SECRET = "hf_llmbench_Zq8xT3secretvalue"


def test_secret_in_env_and_args_is_in_no_output(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_TEST_SECRET", SECRET)
    pytester.makefile(
        ".yaml",
        **{
            "configs/servers": smol_configs(
                '{name: good, env: {HF_TOKEN: "{env:LLMBENCH_TEST_SECRET}"}, args: [--hf-token, "{env:LLMBENCH_TEST_SECRET}"]}',
                '{name: bad, env: {MY_API_KEY: "{env:LLMBENCH_TEST_SECRET}"}, '
                'args: ["--api-key={env:LLMBENCH_TEST_SECRET}", --no-such-flag]}',
            )
        },
    )
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(
        test_x="""
        from pytest_llmbench import Scenario

        def test_x(llm_server, bench):
            bench.run(Scenario("s", output_len=4, num_prompts=1, warmup=0))
    """
    )
    results, junit = tmp_path / "results", tmp_path / "junit.xml"
    result = pytester.runpytest_subprocess(
        f"--results-dir={results}", f"--junitxml={junit}", "-p", "no:cacheprovider", "-rA"
    )
    result.assert_outcomes(passed=1, errors=1)
    outputs = {"terminal": result.stdout.str() + result.stderr.str(), "junit": junit.read_text()}
    for f in [*results.rglob("*.jsonl"), *results.rglob("*.log"), *results.rglob("*.json")]:
        outputs[str(f.relative_to(results))] = f.read_text(errors="replace")
    assert {"results.jsonl", "good/server.log", "bad/server.log"} <= set(outputs)
    assert "--no-such-flag" in outputs["terminal"], "the failed start's message is shown…"
    leaks = [name for name, text in outputs.items() if SECRET in text]
    assert not leaks, f"secret found in {leaks}"
    assert "--hf-token ***" in outputs["results.jsonl"] or '"--hf-token", "***"' in outputs["results.jsonl"]
