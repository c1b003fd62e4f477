"""Quality and speculative-decoding benches of the CPU suite (llama.cpp + SmolLM2-135M, 2 cores).

The posts' quality benches at CPU size: accept length per request on MT-Bench and HumanEval prompts
for the drafting configs (natural stops: with ignore_eos the tiny model loops and n-gram drafting then
accepts nearly everything), a 50-case BFCL subset through the engine's chat template with tools, and
tokens per answer. SmolLM2-135M passes only the 10 irrelevance cases: its chat template drops ``tools``
(llama-server's /apply-template shows a prompt without them), and in the Qwen3 FC raw-prompt mode, which
puts the tools in the text, it still writes no valid call (10/50 there too, at 5.5 s per case instead
of ~1.7 s) — so the CPU bench gates the plumbing and the irrelevance verdicts, not tool-calling skill.
Every number that is gated goes through ``bench.check``; accept length and BFCL are gated per case
(paired against the baseline's sidecar, gate/noise/paired.py); the per-request and per-case detail goes
to results.jsonl.
"""

import warnings

import pytest

from pytest_llmbench.evals import bfcl, thinking
from pytest_llmbench.evals.accept_length import run_accept_length
from pytest_llmbench.evals.protocols import get_protocol, protocol_body
from pytest_llmbench.evals.record import write_eval
from pytest_llmbench.gate import McNemar, PairedT, StdErr
from pytest_llmbench.workload.requests import run_requests

CARD_CPU = get_protocol("dflash2-card-cpu")


@pytest.mark.llm_configs("cpu", "spec")
@pytest.mark.parametrize("set_name", ["mt-bench", "humaneval"])
def test_accept_length(llm_server, bench, datasets, set_name):
    prompts = datasets.prompt_set(set_name, CARD_CPU.prompts_per_set, CARD_CPU.seed)
    by_arm = {role: run_accept_length(server, prompts, CARD_CPU.name) for role, server in bench.arms()}
    for role, arm_result in by_arm.items():
        assert arm_result.failed == 0, f"{role}: {arm_result.failed} request(s) failed: {arm_result.errors}"
        assert arm_result.values, f"{llm_server.name} ({role}) drafted nothing on {set_name}: no accept length"
    result = by_arm["candidate"]
    summary = result.summary()
    write_eval(bench, "accept_length", result.as_dict())
    bench.record("accept_length_se", summary.se)
    # Paired per prompt and seed — against the baseline's sidecar, or in a comparison against the reference
    # arm on the same prompts: the spread between prompts cancels.
    reference = by_arm.get("reference")
    bench.check(
        "accept_length",
        cases=result.by_case(),
        noise=PairedT(alpha=0.01),
        reference_cases=reference.by_case() if reference else None,
    )


@pytest.mark.llm_configs("cpu", "nospec")
def test_bfcl_subset(llm_server, bench, snapshot):
    cases = bfcl.subset_cases(bfcl.SUBSET_CPU)
    by_arm = {role: bfcl.run_bfcl(server, cases, "tools", "bfcl-cpu") for role, server in bench.arms()}
    result, reference = by_arm["candidate"], by_arm.get("reference")
    write_eval(bench, "bfcl", result.as_dict())
    for category, (passed, total) in result.per_category().items():
        bench.record(f"bfcl.{category}", f"{passed}/{total}")  # reported, not gated
    bench.record("bfcl_mean_latency_s", result.mean_latency_s())
    failed_requests = [v.id for v in result.verdicts if v.error.startswith("request failed")]
    assert not failed_requests, f"requests failed for {failed_requests}"
    # The pass/fail set: a baseline bump (--snapshot-update) shows in review which cases flipped; a
    # flip within the noise is a warning here; the gate judges the flipped cases.
    if not snapshot == result.pass_fail():
        warnings.warn(
            "BFCL cases flipped against the stored pass/fail set:\n" + "\n".join(snapshot.get_assert_diff()),
            stacklevel=1,
        )
    # Exact McNemar on the cases that flipped against the baseline's sidecar (Fisher on the totals without
    # one), or in a comparison against the reference arm's verdicts on the same cases.
    bench.check(
        "bfcl_passed",
        result.passed,
        n=result.total,
        cases=result.by_case(),
        noise=McNemar(alpha=0.01),
        reference_cases=reference.by_case() if reference else None,
    )


@pytest.mark.llm_configs("cpu", "nospec")
def test_tokens_per_answer(llm_server, bench, datasets):
    proto = get_protocol("cpu-greedy")
    prompts = datasets.prompt_set("mt-bench", proto.prompts_per_set, proto.seed)
    bodies = [{**protocol_body(proto.name), "messages": p.messages()} for p in prompts]
    records = run_requests(llm_server, bodies, concurrency=proto.users)
    result = thinking.count_tokens(
        llm_server, [(p.id, p.set, r) for p, r in zip(prompts, records, strict=True)], proto.max_tokens
    )
    assert result.failed == 0, [r.error for r in records if not r.ok]
    write_eval(bench, "tokens_per_answer", result.as_dict())
    bench.record("answers_cut", result.cut())
    thinking_tokens = result.thinking()
    if len(thinking_tokens) >= 2 and any(thinking_tokens):  # SmolLM2 never thinks; a thinking model is gated
        bench.check("thinking_tokens", thinking_tokens, noise=StdErr(k=2), direction="lower")
    bench.check("total_tokens", result.totals(), noise=StdErr(k=2), direction="lower")
