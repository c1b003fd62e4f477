"""Secrets never reach any output: terminal, results.jsonl, server logs, JUnit XML, summary.md, report.html
and CI's step summary — neither for a server that runs nor for one that fails to start (its command line
and log tail are in the error). Planted (issue 52): a long flag's value, the value of llama-server's short
form ``-hft`` of ``--hf-token``, env values under names of several shapes, and the API key the server is
started with and the requests send."""

from __future__ import annotations

import pytest

from .conftest import assert_nothing_left_running, records, smol_configs

pytestmark = pytest.mark.integration

#: env var on the host → the secret it holds, each used once below
PLANTED = {
    "P_FLAG": "hf_flag_Zq8xT3secretvalue1",
    "P_SHORT": "hf_short_Wm4pQ9secretvalue2",
    "P_OPENAI": "openai_Xx91secretvalue3",
    "P_DBPASS": "dbpass_Yy82secretvalue4",
    "P_CAMEL": "camel_Zz73secretvalue5",
    "P_HF": "hf_env_Vv64secretvalue6",
    "P_API": "sk-llmbench-Kr27apikeyvalue7",
}
ENV = '{OPENAI_KEY: "{env:P_OPENAI}", DB_PASS: "{env:P_DBPASS}", clientSecret: "{env:P_CAMEL}", HF_TOKEN: "{env:P_HF}"}'
ARGS = '--hf-token, "{env:P_FLAG}", -hft, "{env:P_SHORT}"'


@pytest.mark.parametrize("api_key", [False, True], ids=["flags-and-env", "with-api-key"])
def test_planted_secrets_are_in_no_output_of_a_start_that_works_and_one_that_fails(
    pytester, tmp_path, monkeypatch, api_key
):
    for var, value in PLANTED.items():
        monkeypatch.setenv(var, value)
    step_summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    keyed = ', --api-key, "{env:P_API}"], api_key_env: P_API' if api_key else "]"
    pytester.makefile(
        ".yaml",
        **{
            "configs/servers": smol_configs(
                f"{{name: good, env: {ENV}, args: [{ARGS}{keyed}}}",
                f"{{name: bad, env: {ENV}, args: [{ARGS}, --no-such-flag{keyed}}}",
            )
        },
    )
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(
        test_x="""
        from pytest_llmbench import Scenario

        def test_x(llm_server, bench):
            # random prompts are cut to length through /tokenize: a control call, with the key when set
            result = bench.run(Scenario("s", dataset="random", input_len=16, output_len=4, num_prompts=2, warmup=1))
            assert result.metrics["completed"] == 2, result.errors
    """
    )
    results, junit = tmp_path / "results", tmp_path / "junit.xml"
    result = pytester.runpytest_subprocess(
        f"--results-dir={results}", f"--junitxml={junit}", "--llmbench-report", "-p", "no:cacheprovider", "-rA"
    )
    outputs = {"terminal": result.stdout.str() + result.stderr.str(), "junit": junit.read_text()}
    outputs["step summary"] = step_summary.read_text() if step_summary.exists() else ""
    for f in results.rglob("*"):
        if f.is_file():
            outputs[str(f.relative_to(results))] = f.read_text(errors="replace")
    result.assert_outcomes(passed=1, errors=1)
    assert {"results.jsonl", "good/server.log", "bad/server.log", "summary.md", "report.html"} <= set(outputs)
    assert outputs["step summary"], "the CI step summary was written"
    assert "--no-such-flag" in outputs["terminal"], "the failed start's message is shown…"
    leaks = {var: [name for name, text in outputs.items() if secret in text] for var, secret in PLANTED.items()}
    assert not any(leaks.values()), f"secrets found: {leaks}"
    (server,) = records(results, "server")
    args = server["server_args"]
    assert args[args.index("--hf-token") + 1] == "***" and args[args.index("-hft") + 1] == "***"
    assert {k: server["env"][k] for k in ("OPENAI_KEY", "DB_PASS", "clientSecret", "HF_TOKEN")} == dict.fromkeys(
        ("OPENAI_KEY", "DB_PASS", "clientSecret", "HF_TOKEN"), "***"
    )
    assert_nothing_left_running(results)
