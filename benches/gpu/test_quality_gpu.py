"""The benchmark posts' quality benches on the GPU configs (SGLang/vLLM, marks ``gpu``): accept length on the
DFlash2 card's five sets under its protocol and the medium variant, SPEED-Bench by domain and by prompt
length, BFCL's 205-case subset in both prompt modes, GSM8K, and thinking tokens per answer.

Sets that cannot be had offline (GSM8K, MATH-500, MBPP, SPEED-Bench) are read from the local data
folder (--llmbench-data / $LLMBENCH_DATA_DIR); when absent the test is skipped naming the path.
"""

import json
import os
import time
import warnings

import pytest

from pytest_llmbench.datasets.prompt_sets import CARD_SETS, sample_by_group
from pytest_llmbench.evals import bfcl, bfcl_multi_turn, gsm8k, thinking
from pytest_llmbench.evals.accept_length import run_accept_length
from pytest_llmbench.evals.protocols import get_protocol
from pytest_llmbench.evals.record import write_eval
from pytest_llmbench.gate import Binomial, McNemar, PairedT, StdErr

# Thinking tokens compare Swift with stock on the prompts where *both* stopped on their own.
THINKING_PARTNER = {"swift-nvfp4-dflash8": "stock-nvfp4-dflash8", "stock-nvfp4-dflash8": "swift-nvfp4-dflash8"}


def _tokens_file(bench, config_name, label):
    return bench.artifact_dir("thinking", config=config_name) / f"{label}.json"


def _gate_common_stops(bench, tokens, label):
    """Save this config's per-answer counts; when its partner already ran in this session, gate thinking
    tokens on the prompts both stopped on (the Swift post's footnote ¹)."""
    mine = _tokens_file(bench, bench.config_name, label)
    mine.write_text(json.dumps(thinking.answers_json(tokens)))
    partner = THINKING_PARTNER.get(bench.config_name)
    theirs = _tokens_file(bench, partner, label) if partner else None
    if theirs is None or not theirs.exists():
        return
    a, b = thinking.common_stops(tokens, thinking.from_answers_json(json.loads(theirs.read_text()), where=str(theirs)))
    bench.record("common_stops", f"{len(a.answers)} of {len(tokens.answers)}")
    bench.record(f"thinking_tokens_common.{partner}", b.as_dict()["thinking_tokens"])
    if a.thinking():
        bench.check("thinking_tokens_common", a.thinking(), noise=StdErr(k=2), direction="lower")


def _gate_thinking(bench, server, result, proto):
    tokens = thinking.from_turns(server, result.turns, proto.max_tokens)
    write_eval(bench, "tokens_per_answer", {"set": result.set, "protocol": proto.name, **tokens.as_dict()})
    _gate_common_stops(bench, tokens, f"{result.set}.{proto.name}")
    bench.record("answers_cut", tokens.cut())
    if tokens.thinking():
        bench.check("thinking_tokens", tokens.thinking(), noise=StdErr(k=2), direction="lower")
    bench.check("total_tokens", tokens.totals(), noise=StdErr(k=2), direction="lower")


@pytest.mark.llm_configs("gpu", "spec")
@pytest.mark.parametrize("protocol", ["dflash2-card", "dflash2-card-medium"])
@pytest.mark.parametrize("set_name", CARD_SETS)
def test_card_accept_length(llm_server, bench, datasets, set_name, protocol):
    proto = get_protocol(protocol)
    prompts = datasets.prompt_set(set_name, proto.prompts_per_set, proto.seed)
    result = run_accept_length(llm_server, prompts, protocol)
    assert result.failed == 0, result.errors
    write_eval(bench, "accept_length", result.as_dict())
    bench.record("accept_length_se", result.summary().se)
    bench.check("accept_length", cases=result.by_case(), noise=PairedT(alpha=0.01))  # per prompt and seed
    _gate_thinking(bench, llm_server, result, proto)


@pytest.mark.llm_configs("gpu", "spec")
@pytest.mark.parametrize("split, key", [("qualitative", "domain"), ("throughput", "length")])
def test_speed_bench_accept_length(llm_server, bench, datasets, split, key):
    proto = get_protocol("speed-bench")
    prompts = datasets.load(f"speed-bench-{split}")
    per_group = (
        proto.prompts_per_set if split == "qualitative" else 12
    )  # the benchmark posts: 10 per domain, 12 per length
    prompts = sample_by_group(prompts, key, per_group, proto.seed)
    t0 = time.perf_counter()
    result = run_accept_length(llm_server, prompts, proto.name)
    total_s = time.perf_counter() - t0
    assert result.failed == 0, result.errors
    # the Swift post: median TPOT 4.49 vs 4.47 ms, the 110 prompts in 1,016 s vs 913 s
    bench.record("total_time_s", total_s)
    bench.check("median_tpot_ms", result.median_tpot_ms())
    bench.check("total_time_s", total_s, direction="lower", hardware_bound=True)
    write_eval(bench, "accept_length", result.as_dict(group_keys=[key]))
    for group, s in result.by(key).items():  # reported per group, gated on the whole set
        bench.record(f"accept_length.{key}={group}", f"{s.mean:.3f}±{s.se:.3f} (n={s.n})")
    bench.check("accept_length", cases=result.by_case(), noise=PairedT(alpha=0.01))  # per prompt and seed
    _gate_thinking(bench, llm_server, result, proto)


@pytest.mark.llm_configs("gpu")
@pytest.mark.parametrize("mode", bfcl.MODES)
def test_bfcl_205(llm_server, bench, snapshot, mode):
    """The posts' 205 cases: 185 single-turn and 20 multi_turn_base. Multi-turn cases are asked in the Qwen
    FC handler's prompt format only (the posts' handler); in ``tools`` mode the 185 single-turn ones run."""
    result = bfcl.run_bfcl(llm_server, bfcl.subset_cases(bfcl.SUBSET_205), mode, "bfcl-qwen-fc")
    if mode == "qwen-fc":
        multi = [i for i in bfcl.read_subset(bfcl.SUBSET_205) if bfcl_multi_turn.is_multi_turn(i)]
        result.verdicts += bfcl_multi_turn.run_multi_turn(llm_server, bfcl_multi_turn.load_multi_turn_cases(multi))
    write_eval(bench, "bfcl", result.as_dict())
    for category, (passed, total) in result.per_category().items():
        bench.record(f"bfcl.{category}", f"{passed}/{total}")
        # the posts compare categories of 20 ("irrelevance 12 → 18, multi_turn_base 14 → 16"): a count of n
        bench.check(f"bfcl_passed.{category}", passed, n=total, noise=Binomial(alpha=0.01))
    bench.record("bfcl_mean_latency_s", result.mean_latency_s())
    # the spec-decode post: 3.24 s (DSpark), 2.53 s (no drafter), 0.91 s (DFlash2 8) mean per call
    bench.check("bfcl_mean_latency_s", result.mean_latency_s(), direction="lower")
    if not snapshot == result.pass_fail():
        warnings.warn(
            "BFCL cases flipped against the stored pass/fail set:\n" + "\n".join(snapshot.get_assert_diff()),
            stacklevel=1,
        )
    # the posts' spread: 168/174/176 on one config; McNemar judges the cases that flipped against the
    # baseline's sidecar, and a published total (no sidecar) by Fisher's test on the 205 cases
    bench.check("bfcl_passed", result.passed, n=result.total, cases=result.by_case(), noise=McNemar(alpha=0.01))


@pytest.mark.llm_configs("gpu")
def test_bfcl_full_categories(llm_server, bench):
    """Whole BFCL categories on request: LLMBENCH_BFCL_CATEGORIES=simple_python,irrelevance,… (the
    205-case subset is what the benchmark posts compare; a full category is for a closer look at one of them)."""
    wanted = [c for c in os.environ.get("LLMBENCH_BFCL_CATEGORIES", "").split(",") if c]
    if not wanted:
        pytest.skip("set LLMBENCH_BFCL_CATEGORIES to run whole BFCL categories")
    result = bfcl.run_bfcl(llm_server, bfcl.load_cases(categories=wanted), "qwen-fc", "bfcl-qwen-fc")
    write_eval(bench, "bfcl_full", result.as_dict())
    for category, (passed, total) in result.per_category().items():
        bench.record(f"bfcl_full.{category}", f"{passed}/{total}")
    bench.check("bfcl_full_passed", result.passed, n=result.total, cases=result.by_case(), noise=McNemar(alpha=0.01))


@pytest.mark.llm_configs("gpu")
def test_gsm8k(llm_server, bench, datasets):
    proto = get_protocol("gsm8k-seeds")
    prompts = datasets.load("gsm8k")
    result, records = gsm8k.run_gsm8k(llm_server, prompts, proto.name)
    write_eval(bench, "gsm8k", result.as_dict())
    bench.record("gsm8k_accuracy", result.accuracy)
    bench.record("gsm8k_cut", result.cut)
    assert result.failed == 0, [r.error for r in records if not r.ok][:5]
    bench.check("gsm8k_correct", result.correct, n=result.n, cases=result.by_case(), noise=McNemar(alpha=0.01))
    tokens = thinking.count_tokens(
        llm_server, [(p.id, p.set, r) for p, r in zip(prompts, records, strict=True)], proto.max_tokens
    )
    write_eval(bench, "tokens_per_answer", {"set": "gsm8k", "protocol": proto.name, **tokens.as_dict()})
    _gate_common_stops(bench, tokens, f"gsm8k.{proto.name}")
    if tokens.thinking():
        bench.check("thinking_tokens", tokens.thinking(), noise=StdErr(k=2), direction="lower")
