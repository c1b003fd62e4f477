"""Decision benches of the CPU suite: llama.cpp + SmolLM2-135M answering sys1bench canary questions.

llama.cpp has no decision route, so the logprob fallback asks one ``max_tokens: 1`` question per
request and reads the option letters' probabilities. The subset (10 tasks per domain: 110 questions)
is scored against the generator's ground truth, calibrated with one temperature per question type
fitted on one half of the cases and scored on the other (both ways round, so every question is scored
once, never by a fit that saw it), and gated per question against the baseline's sidecar by a paired
bootstrap over cases (accuracy, log loss; the paired interval against the baseline's answers is reported).
The determinism bench asks the same questions with a cold and then a warm prefix cache, and compares
greedy text with prefill computed fresh and reused.
"""

import pytest

from pytest_llmbench.datasets import decisions as D
from pytest_llmbench.evals.decisions import results as R
from pytest_llmbench.evals.decisions.calibration import crossfit
from pytest_llmbench.evals.decisions.clients import client_for
from pytest_llmbench.evals.decisions.determinism import cold_warm, compare_passes, greedy_cached_vs_uncached
from pytest_llmbench.evals.decisions.metrics import flat, summary_by
from pytest_llmbench.evals.decisions.paired import CASE_SEP, gate_cases, paired_gap
from pytest_llmbench.gate import History, PairedBootstrap, Spread

pytestmark = pytest.mark.llm_configs("cpu", "nospec")

CANARY_PER_DOMAIN = 10  # 10 support tickets × 3 questions + 10 emails × 8 = 110 questions
CACHE_PER_DOMAIN = 4  # 44 questions, asked twice
GREEDY_PROMPTS = 4
CONCURRENCY = 2  # two cores


@pytest.fixture(scope="module")
def canary():
    return D.stratified_subset(D.canary_cases(), CANARY_PER_DOMAIN, seed=0)


def test_canary_decisions(llm_server, bench, canary):
    by_arm = {role: client_for(server, concurrency=CONCURRENCY).run(canary) for role, server in bench.arms()}
    decisions, reference = by_arm["candidate"], by_arm.get("reference")  # reference: in a comparison only
    assert len(decisions) == D.n_questions(canary)  # every question accounted for, failures included
    raw = summary_by(decisions)
    cf = crossfit(decisions, k=2, seed=0)  # fit on one half of the cases, score the other, and back
    calibrated = summary_by(cf.decisions)
    # Temperatures with log-priors per domain/question/option (they can move top answers).
    cf_priors = crossfit(decisions, k=2, seed=0, priors=True)
    with_priors = summary_by(cf_priors.decisions)
    R.save_run(
        bench,
        "canary",
        decisions,
        {"raw": raw, "calibrated": calibrated, "priors": with_priors},
        {"failures": sorted({d.reason for d in decisions if not d.ok})[:20]},
    )
    R.save_calibration(
        bench,
        {
            "dataset": "sys1bench canary subset",
            "cases": len(canary),
            "temperatures": cf.to_json(),
            "temperatures_and_priors": cf_priors.to_json(),
            "metrics": {"before": raw, "after": calibrated, "after_priors": with_priors},
        },
    )
    for prefix, by_type in (("", raw), ("calibrated.", calibrated), ("priors.", with_priors)):
        for k, v in flat(by_type, prefix).items():
            bench.record(k, v)

    baseline = R.baseline_answers(bench, "canary")
    if baseline is not None:  # the paired interval: same questions, this run vs the baseline's answers
        gap = paired_gap(decisions, baseline, "correct", names=("run", "baseline"))
        bench.record("paired_accuracy_gap", gap.gap)
        bench.record("paired_accuracy_interval", [gap.low, gap.high])  # reported; the gate is "accuracy" below
    R.maybe_update_baseline_answers(bench, "canary", decisions)

    n, answered = raw["all"]["n"], raw["all"]["answered"]
    bench.check("failed", raw["all"]["failed"], noise=Spread(max(3.0, 0.02 * n)), direction="lower")
    # Per question, paired with the baseline's sidecar; a case's questions are resampled together.
    paired = PairedBootstrap(alpha=0.01, cluster=CASE_SEP)
    # In a comparison, against the reference arm's answers to the same questions instead.
    bench.check(
        "accuracy",
        cases=gate_cases(decisions, "correct"),
        noise=paired,
        reference_cases=gate_cases(reference, "correct") if reference else None,
    )
    bench.check(
        "log_loss",
        cases=gate_cases(decisions, "log_loss"),
        noise=paired,
        direction="lower",
        reference_cases=gate_cases(reference, "log_loss") if reference else None,
    )
    bench.check("calibrated_log_loss", cases=gate_cases(cf.decisions, "log_loss"), noise=paired)
    bench.check("calibrated_ece", calibrated["all"]["ece"], noise=Spread(0.03))
    assert answered > 0.8 * n, (
        f"only {answered} of {n} questions answered: {sorted({d.reason for d in decisions if not d.ok})[:5]}"
    )


def test_prefix_cache_determinism(llm_server, bench, canary):
    cases = D.stratified_subset(canary, CACHE_PER_DOMAIN, seed=1)
    client = client_for(llm_server, concurrency=CONCURRENCY)
    cold, warm, note = cold_warm(llm_server, client, cases)
    diff = compare_passes(cold, warm)
    greedy = greedy_cached_vs_uncached(llm_server, [c.state_text() for c in cases[:GREEDY_PROMPTS]], max_tokens=32)
    R.save_run(bench, "cache-cold", cold, {"pass": "cold", "flush_note": note})
    R.save_run(
        bench,
        "cache-warm",
        warm,
        {
            "pass": "warm",
            **diff.as_dict(),
            "changed": diff.changed,
            "greedy": {**greedy.as_dict(), "examples": greedy.examples},
        },
    )
    bench.record("decisions_compared", diff.n)
    bench.record("max_prob_shift", diff.max_prob_shift)
    bench.record("greedy_prompts", greedy.n)
    bench.record("greedy_cache_hits", greedy.cache_hits)
    assert note is None, f"the cold pass is not cold: {note}"
    assert diff.n >= 0.8 * D.n_questions(cases), f"only {diff.n} decisions answered in both passes"
    assert greedy.failed == 0 and greedy.cache_hits == greedy.n, greedy.as_dict()
    # The decisions post: 0 of 250 without a warm hierarchical cache, 25–34 with it. Gated against the spread of
    # this config's own history; until three runs exist, a move of more than 3 answers fails.
    bench.check(
        "answers_changed", diff.answers_changed, noise=History(k=3, min_runs=3, fallback=Spread(3)), direction="lower"
    )
    bench.check(
        "text_mismatches", greedy.mismatched, noise=History(k=3, min_runs=3, fallback=Spread(2)), direction="lower"
    )
