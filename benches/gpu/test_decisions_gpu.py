"""The decisions post's benches on the GPU configs (SGLang, Qwen3.8-27B and Swift 1.5).

* Typed Decisions test split through ``/v1/systemone`` twice (pass-to-pass noise) and once through
  ``/v1/decisions``, scored against the teacher (agreement, KL, Brier, log loss, ECE, DecisionScore).
* Calibration in the client: temperatures per question type (and priors) fitted on the train split,
  scored once on test, ``calibration.json`` beside the results; Typed Decision Bench by 5-fold
  cross-fitting (no train split); Calibrated Typed Decisions train → test; PubMedQA with the
  Calibrated Typed Decisions temperatures only (a task the fit never saw).
* Paired bootstrap intervals over cases: Swift − stock at each precision, FP8/NVFP4 − BF16, and each
  run against its baseline answers; a gap fails only when its interval excludes zero on the bad side.
* Prefix-cache determinism: 50 cases cold (flushed) then warm; changed top answers gated with a spread.

The data sets are not shipped: point ``$LLMBENCH_DATA_DIR`` (or ``$LLMBENCH_TYPED_DECISIONS`` and
friends) at local copies; without them each test is skipped naming the path it looked for.
"""

import pytest

from pytest_llmbench.evals.decisions import datasets as D
from pytest_llmbench.evals.decisions import results as R
from pytest_llmbench.evals.decisions.calibration import crossfit, fit
from pytest_llmbench.evals.decisions.clients import client_for
from pytest_llmbench.evals.decisions.determinism import cold_warm, compare_passes
from pytest_llmbench.evals.decisions.metrics import decision_values, flat, summary_by
from pytest_llmbench.evals.decisions.paired import changed_answers, paired_gap
from pytest_llmbench.gate import Binomial, History, Spread, StdErr

# The seven configs of the decisions post: six checkpoints without a drafter, and the DFlash2 row.
DECISION_CONFIGS = [
    "stock-bf16-nospec", "stock-fp8-nospec", "stock-nvfp4-nospec",
    "swift-bf16-nospec", "swift-fp8-nospec", "swift-nvfp4-nospec", "stock-nvfp4-dflash8",
]
# Only the two NVFP4 configs ran the train split and the real-answer sets.
NVFP4 = ["stock-nvfp4-nospec", "swift-nvfp4-nospec"]
# (candidate, reference) pairs compared in one session, whichever of the two runs second.
PAIRS = [
    ("swift-nvfp4-nospec", "stock-nvfp4-nospec"), ("swift-fp8-nospec", "stock-fp8-nospec"),
    ("swift-bf16-nospec", "stock-bf16-nospec"),
    ("stock-fp8-nospec", "stock-bf16-nospec"), ("stock-nvfp4-nospec", "stock-bf16-nospec"),
    ("swift-fp8-nospec", "swift-bf16-nospec"), ("swift-nvfp4-nospec", "swift-bf16-nospec"),
]
CONCURRENCY = 4  # --max-running-requests 4
CACHE_CASES = 50

pytestmark = pytest.mark.gpu
every_config = pytest.mark.llm_configs("gpu", names=DECISION_CONFIGS)
nvfp4_only = pytest.mark.llm_configs("gpu", names=NVFP4)


def answered(decisions, metric):
    return [v for v in decision_values(decisions, metric).values() if v is not None]


def record_summary(bench, by_type, prefix=""):
    for k, v in flat(by_type, prefix).items():
        bench.record(k, v)


def systemone(server):
    return client_for(server, "systemone", concurrency=CONCURRENCY)


def split_answers(bench, server, name, split):
    """/v1/systemone answers to one split, asked once per config per session (reused from the file)."""
    key = f"{name}.{split}"
    done = R.config_answers(bench, server.name, key)
    if done is not None:
        return done
    out = systemone(server).run(D.load_split_or_skip(name, split))
    R.save_run(bench, key, out, summary_by(out))
    return out


@every_config
def test_typed_decisions_systemone(llm_server, bench):
    cases = D.load_split_or_skip("typed-decisions", "test")
    client = systemone(llm_server)
    pass1 = client.run(cases)
    pass2 = client.run(cases)
    s = summary_by(pass1)
    repeat_changes = changed_answers(pass1, pass2)
    R.save_run(bench, "typed-decisions.pass1", pass1, s)
    R.save_run(bench, "typed-decisions.pass2", pass2, summary_by(pass2), {"changed_vs_pass1": repeat_changes})
    record_summary(bench, s)
    bench.record("pass_to_pass_changes", repeat_changes)
    baseline = R.baseline_answers(bench, "typed-decisions.pass1")
    if baseline is not None:
        gap = paired_gap(pass1, baseline, "correct", names=("run", "baseline"))
        bench.check("paired_agreement_gap", gap.gap, noise=gap.gate(), reference=0.0, direction=gap.direction,
                    family="decisions", hardware_bound=False)
    R.maybe_update_baseline_answers(bench, "typed-decisions.pass1", pass1)
    n = s["all"]["n"]
    bench.check("failed", s["all"]["failed"], noise=Spread(max(2.0, 0.001 * n)), direction="lower")
    bench.check("agreement", round(s["all"]["accuracy"] * n), n=n, noise=Binomial(alpha=0.01))
    bench.check("kl", answered(pass1, "kl"), noise=StdErr(k=2))
    # the seeds: at most 3 of 2,000 top answers move between two cold passes
    bench.check("pass_to_pass_changes", repeat_changes, noise=History(k=3, fallback=Spread(5)), direction="lower")


@every_config
def test_typed_decisions_native_route(llm_server, bench):
    cases = D.load_split_or_skip("typed-decisions", "test")
    native = client_for(llm_server, "decisions", concurrency=CONCURRENCY).run(cases)
    s = summary_by(native)
    R.save_run(bench, "typed-decisions.native1", native, s)
    record_summary(bench, s)
    pass1 = R.config_answers(bench, llm_server.name, "typed-decisions.pass1")
    if pass1 is not None:  # /v1/decisions vs /v1/systemone on the same server
        bench.record("route_changes", changed_answers(native, pass1))
        bench.check("route_changes", changed_answers(native, pass1), noise=History(k=3, fallback=Spread(5)),
                    direction="lower")
    n = s["all"]["n"]
    bench.check("agreement", round(s["all"]["accuracy"] * n), n=n, noise=Binomial(alpha=0.01))


@nvfp4_only
@pytest.mark.parametrize("priors", [False, True], ids=["temperatures", "priors"])
def test_typed_decisions_calibration(llm_server, bench, priors):
    test_answers = (R.config_answers(bench, llm_server.name, "typed-decisions.pass1")
                    or split_answers(bench, llm_server, "typed-decisions", "test"))
    train_answers = split_answers(bench, llm_server, "typed-decisions", "train")
    cal = fit(train_answers, priors=priors)
    after = cal.apply(test_answers)
    before_s, after_s = summary_by(test_answers), summary_by(after)
    name = "priors" if priors else "temperatures"
    R.save_calibration(bench, {"dataset": "typed-decisions", "fit": "train", "scored": "test", **cal.to_json(),
                               "metrics": {"before": before_s, "after": after_s}}, f"calibration.{name}.json")
    record_summary(bench, after_s, "calibrated.")
    for t, v in cal.temperatures.items():
        bench.record(f"temperature.{t}", v)
    bench.check("calibrated_kl", answered(after, "kl"), noise=StdErr(k=2))
    if priors:
        n = after_s["all"]["n"]
        bench.check("calibrated_agreement", round(after_s["all"]["accuracy"] * n), n=n, noise=Binomial(alpha=0.01))


@nvfp4_only
@pytest.mark.parametrize("name", ["typed-decision-bench", "calibrated-typed-decisions", "pubmedqa"])
def test_real_answer_sets(llm_server, bench, name):
    test_answers = split_answers(bench, llm_server, name, "test")
    if name == "typed-decision-bench":  # no train split: 5 folds, each scored by a fit on the other four
        cf = crossfit(test_answers, k=5, seed=0)
        after, payload = cf.decisions, cf.to_json()
    elif name == "calibrated-typed-decisions":
        cal = fit(split_answers(bench, llm_server, name, "train"))
        after, payload = cal.apply(test_answers), {"fit": "train", **cal.to_json()}
    else:  # unseen task: only the Calibrated Typed Decisions choice temperature applies
        cal = fit(split_answers(bench, llm_server, "calibrated-typed-decisions", "train"))
        after, payload = cal.apply(test_answers), {"fit": "calibrated-typed-decisions train", **cal.to_json()}
    before_s, after_s = summary_by(test_answers), summary_by(after)
    R.save_run(bench, f"{name}.calibrated", after, {"raw": before_s, "calibrated": after_s})
    R.save_calibration(bench, {"dataset": name, **payload, "metrics": {"before": before_s, "after": after_s}},
                       f"calibration.{name}.json")
    record_summary(bench, before_s)
    record_summary(bench, after_s, "calibrated.")
    gain = paired_gap(after, test_answers, "decision_score", names=("calibrated", "raw"))
    bench.record("calibration_score_gain", gain.gap)
    bench.record("calibration_score_gain_interval", [gain.low, gain.high])
    n = before_s["all"]["n"]
    bench.check("correct", round(before_s["all"]["accuracy"] * n), n=n, noise=Binomial(alpha=0.01))
    bench.check("calibrated_log_loss", answered(after, "log_loss"), noise=StdErr(k=2))
    bench.check("calibrated_ece", after_s["all"]["ece"], noise=Spread(0.02))


@every_config
@pytest.mark.parametrize("dataset", ["typed-decisions.pass1", "calibrated-typed-decisions.test", "pubmedqa.test",
                                     "typed-decision-bench.test"])
def test_paired_gaps_between_configs(llm_server, bench, dataset):
    """Swift − stock and quantized − BF16, whichever config of a pair ran second in this session."""
    mine = R.config_answers(bench, llm_server.name, dataset)
    if mine is None:
        pytest.skip(f"{llm_server.name} has no {dataset} answers in this session")
    gaps = []
    for cand, ref in PAIRS:
        if llm_server.name not in (cand, ref):
            continue
        other = ref if llm_server.name == cand else cand
        theirs = R.config_answers(bench, other, dataset)
        if theirs is None:
            continue
        a, b = (mine, theirs) if llm_server.name == cand else (theirs, mine)
        metric = "decision_score" if dataset.startswith("typed-decision-bench") else "correct"
        gap = paired_gap(a, b, metric, names=(cand, ref))
        gaps.append(gap)
        bench.record(f"gap.{cand}.vs.{ref}", gap.gap)
        bench.record(f"gap.{cand}.vs.{ref}.interval", [gap.low, gap.high])
        bench.record(f"top_answers_changed.{cand}.vs.{ref}", changed_answers(a, b))
    if not gaps:
        pytest.skip(f"no partner config of {llm_server.name} has {dataset} answers yet in this session")
    worse = [g.describe() for g in gaps if g.worse]
    assert not worse, "; ".join(worse)


@every_config
def test_prefix_cache_determinism(llm_server, bench):
    cases = D.load_split_or_skip("typed-decisions", "test")[:CACHE_CASES]
    cold, warm, note = cold_warm(llm_server, systemone(llm_server), cases)
    diff = compare_passes(cold, warm)
    R.save_run(bench, "cache-cold", cold, {"pass": "cold", "flush_note": note})
    R.save_run(bench, "cache-warm", warm, {"pass": "warm", **diff.as_dict(), "changed": diff.changed})
    bench.record("decisions_compared", diff.n)
    bench.record("max_prob_shift", diff.max_prob_shift)
    assert note is None, f"the cold pass is not cold: {note}"
    # the seeds: 25–34 of 250 with a warm hierarchical cache, 0 without it
    bench.check("answers_changed", diff.answers_changed, noise=History(k=3, fallback=Spread(5)), direction="lower")
