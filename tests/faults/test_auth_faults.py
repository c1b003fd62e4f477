"""A server that wants an API key (issue 52 #10), with the real llama-server started with ``--api-key``:
a config without ``api_key_env`` fails its test with one line naming the config, the URL and the HTTP
status (no plugin-source traceback); with ``api_key_env`` every request, control calls included
(/tokenize for random prompts, the slot flush, /metrics), carries the key and the bench runs."""

from __future__ import annotations

import pytest

from .conftest import assert_nothing_left_running, records, smol_configs

pytestmark = pytest.mark.integration

KEY = "sk-llmbench-auth-Qp58keyvalue"


KEYED = '{name: keyed, args: [--api-key, "{env:LLMBENCH_AUTH_KEY}"], api_key_env: LLMBENCH_AUTH_KEY}'
NOKEY = '{name: nokey, args: [--api-key, "{env:LLMBENCH_AUTH_KEY}"]}'


@pytest.mark.parametrize(
    "configs, outcomes",
    [((NOKEY,), {"failed": 2}), ((KEYED, NOKEY), {"passed": 2, "failed": 2})],
    ids=["without-the-key", "with-api_key_env-too"],
)
def test_a_keyed_server_runs_with_api_key_env_and_without_it_fails_naming_config_url_and_status(
    pytester, tmp_path, monkeypatch, configs, outcomes
):
    monkeypatch.setenv("LLMBENCH_AUTH_KEY", KEY)
    pytester.makefile(".yaml", **{"configs/servers": smol_configs(*configs)})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(
        test_x="""
        from pytest_llmbench import Scenario

        def test_tokenized(llm_server, bench):  # random prompts are cut to length through /tokenize first
            result = bench.run(Scenario("r", dataset="random", input_len=16, output_len=4, num_prompts=2, warmup=2))
            assert result.metrics["completed"] == 2, result.errors
            assert llm_server.spec_counters() is not None  # /metrics answered: the control client has the key

        def test_warmup(llm_server, bench):  # ShareGPT prompts: the warm-up requests come first
            result = bench.run(Scenario("s", output_len=4, num_prompts=2, warmup=2))
            assert result.metrics["completed"] == 2, result.errors
    """
    )
    results = tmp_path / "results"
    result = pytester.runpytest_subprocess(f"--results-dir={results}", "-p", "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(**outcomes)
    tokenized = out[out.index("_ test_tokenized[nokey] _") :]
    assert "config nokey: POST http://127.0.0.1:" in tokenized and "/tokenize answered HTTP 401" in tokenized
    warmup = out[out.index("_ test_warmup[nokey] _") :]
    assert "config nokey: all 2 warm-up requests of scenario 's' to http://127.0.0.1:" in warmup
    assert "/v1/chat/completions failed: HTTP 401" in warmup
    for failure in (tokenized, warmup):
        assert "name the environment variable that holds it with api_key_env" in failure  # what to set
        assert "pytest_llmbench/" not in failure.split("--- last 20 lines")[0]  # no plugin source lines
    assert "Traceback" not in out and "WorkloadError" not in out and "HTTPStatusError" not in out
    assert "During handling of the above exception" not in out
    assert KEY not in out
    scenarios = records(results, "scenario")
    assert sorted(r["scenario"] for r in scenarios) == (["r", "s"] if "passed" in outcomes else [])  # keyed's
    assert all(r["config"] == "keyed" and r["metrics"]["completed"] == 2 for r in scenarios)
    assert_nothing_left_running(results)
