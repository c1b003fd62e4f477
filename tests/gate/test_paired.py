"""Paired noise models: their statistics against scipy on known data, the pairing rule and the fallback."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pytest_llmbench.gate import McNemar, PairedBootstrap, PairedT
from pytest_llmbench.gate.noise import Binomial, NoiseModelError, StdErr, noise_from_dict
from pytest_llmbench.gate.noise.paired import common_cases
from pytest_llmbench.gate.types import BaselineEntry, Observation
from pytest_llmbench.records.results import iter_records


def entry_of(cases: dict[str, float], direction="higher", *, count=False) -> BaselineEntry:
    obs = Observation.of(None, cases=cases)
    value = sum(cases.values()) if count else obs.value
    return BaselineEntry(
        value=value, direction=direction, noise={}, n=len(cases), se=None if count else obs.se, cases=cases
    )


def keyed(values, prefix="p") -> dict[str, float]:
    return {f"{prefix}{i:03d}": float(v) for i, v in enumerate(values)}


@pytest.fixture
def prompts():
    """32 prompts whose accept lengths differ a lot between prompts and little between reruns."""
    rng = np.random.default_rng(7)
    base = np.round(rng.normal(3.0, 1.0, 32), 3)  # at the sidecar's precision, so scipy sees the same data
    return base, np.round(base + rng.normal(-0.25, 0.3, 32), 3)


# --- PairedT --------------------------------------------------------------------------------------------


def test_paired_t_matches_scipy_ttest_rel(prompts):
    base, new = prompts
    v = PairedT(alpha=0.01).verdict(entry_of(keyed(base)), Observation.of(None, cases=keyed(new)), "higher")
    assert v.paired and v.status == "REGRESSED"
    assert v.p_value == pytest.approx(stats.ttest_rel(new, base, alternative="less").pvalue, rel=1e-9)
    assert v.tolerance == pytest.approx(stats.t.ppf(0.99, 31) * stats.sem(new - base))
    assert v.baseline == pytest.approx(base.mean()) and v.observed == pytest.approx(new.mean())
    assert "paired t on 32 cases" in v.rule and v.rule.startswith("PairedT alpha=0.01")


def test_paired_t_resolves_what_the_unpaired_rule_cannot(prompts):
    base, new = prompts
    e = entry_of(keyed(base))
    unpaired = StdErr(alpha=0.01).verdict(e, Observation.of(list(new)), "higher")
    paired = PairedT(alpha=0.01).verdict(e, Observation.of(None, cases=keyed(new)), "higher")
    assert unpaired.status == "pass" and paired.status == "REGRESSED"


def test_paired_t_lower_is_better_and_improvements(prompts):
    base, new = prompts  # new is lower: better when lower is better
    v = PairedT().verdict(entry_of(keyed(base), "lower"), Observation.of(None, cases=keyed(new)), "lower")
    assert v.status == "improved" and v.p_value == pytest.approx(
        1 - stats.ttest_rel(new, base, alternative="less").pvalue
    )


def test_rounding_residue_is_not_a_difference():
    """A rerun that repeats every case, compared with values read back at 6 significant digits."""
    exact = keyed(np.arange(1, 33) / 7)
    read_back = {k: float(f"{v:.6g}") for k, v in exact.items()}
    v = PairedT().verdict(entry_of(read_back), Observation.of(None, cases=exact), "higher")
    assert v.status == "pass" and v.p_value == 1.0


def test_paired_t_zero_spread_of_differences():
    base = keyed([1.0, 2.0, 3.0, 4.0])
    same = PairedT().verdict(entry_of(base), Observation.of(None, cases=base), "higher")
    assert same.status == "pass" and same.p_value == 1.0 and same.tolerance == 0.0
    lower = PairedT().verdict(
        entry_of(base), Observation.of(None, cases={k: v - 0.5 for k, v in base.items()}), "higher"
    )
    assert lower.status == "REGRESSED" and lower.p_value == 0.0


def test_paired_t_falls_back_to_welch_when_cases_differ(prompts):
    base, new = prompts
    e = entry_of(keyed(base))
    obs = Observation.of(None, cases=keyed(new, prefix="q"))  # another prompt set: no shared ids
    v = PairedT(alpha=0.01).verdict(e, obs, "higher")
    ref = StdErr(alpha=0.01).verdict(e, obs, "higher")
    assert not v.paired and v.status == ref.status and v.tolerance == ref.tolerance
    assert v.rule.startswith("unpaired (0 of 32 case ids shared, pairing needs 90% and at least 2): StdErr alpha=0.01")
    welch = stats.ttest_ind_from_stats(
        new.mean(), new.std(ddof=1), 32, base.mean(), base.std(ddof=1), 32, equal_var=False, alternative="less"
    )
    assert v.p_value == pytest.approx(welch.pvalue, rel=1e-6)


def test_fallback_says_which_side_has_no_cases(prompts):
    base, new = prompts
    no_sidecar = BaselineEntry(value=base.mean(), direction="higher", noise={}, n=32, se=stats.sem(base))
    v = PairedT().verdict(no_sidecar, Observation.of(None, cases=keyed(new)), "higher")
    assert "unpaired (the baseline has no per-case values)" in v.rule
    v = PairedT().verdict(entry_of(keyed(base)), Observation.of(list(new)), "higher")
    assert "unpaired (this check passed no cases=)" in v.rule


def test_overlap_rule():
    b = keyed(range(32))
    assert len(common_cases(b, {k: 0.0 for k in list(b)[:29]}, 0.9)[0]) == 29  # 29/32 = 91%: paired
    common, why = common_cases(b, {k: 0.0 for k in list(b)[:28]}, 0.9)  # 28/32 = 87.5%
    assert common == [] and "28 of 32" in why
    assert common_cases({"a": 1.0}, {"a": 1.0}, 0.9)[0] == []  # one case is not a paired test


def test_partial_overlap_is_paired_on_the_shared_cases(prompts):
    base, new = prompts
    obs_cases = dict(list(keyed(new).items())[:30])
    v = PairedT().verdict(entry_of(keyed(base)), Observation.of(None, cases=obs_cases), "higher")
    assert v.paired and "30 of 32 cases (shared ids)" in v.rule
    assert v.p_value == pytest.approx(stats.ttest_rel(new[:30], base[:30], alternative="less").pvalue)


# --- McNemar --------------------------------------------------------------------------------------------


def pass_fail(n=205, worse=0, better=0, seed=3):
    """Pass/fail cases at ~80% and the same cases with ``worse`` passes lost and ``better`` fails fixed."""
    rng = np.random.default_rng(seed)
    base = (rng.random(n) < 0.8).astype(float)
    new = base.copy()
    passing, failing = np.flatnonzero(base == 1), np.flatnonzero(base == 0)
    new[passing[:worse]] = 0
    new[failing[:better]] = 1
    return keyed(base, "c"), keyed(new, "c")


@pytest.mark.parametrize("worse, better", [(9, 1), (6, 6), (3, 0), (0, 5)])
def test_mcnemar_matches_scipy_binomtest(worse, better):
    b, n = pass_fail(worse=worse, better=better)
    obs = Observation.of(sum(n.values()), n=205, cases=n)
    v = McNemar(alpha=0.01).verdict(entry_of(b, count=True), obs, "higher")
    p = stats.binomtest(worse, worse + better, 0.5, alternative="greater").pvalue
    assert v.paired and v.p_value == pytest.approx(p)
    assert v.status == (
        "REGRESSED"
        if p < 0.01
        else "pass"
        if worse >= better or stats.binomtest(better, worse + better, 0.5, alternative="greater").pvalue >= 0.01
        else "improved"
    )
    assert f"{worse} worse, {better} better" in v.rule
    assert v.delta == better - worse  # all cases shared: the count moved by the net change


def test_mcnemar_critical_count_and_tolerance():
    b, n = pass_fail(worse=8, better=0)
    v = McNemar(alpha=0.01).verdict(entry_of(b, count=True), Observation.of(None, cases=n), "higher")
    # of 8 changed cases: 8 worse has p = 1/256 < 0.01, 7 worse has p = 9/256 > 0.01, so 8 is the critical count
    assert "fail if ≥ 8 of the 8 changed cases are worse" in v.rule and v.status == "REGRESSED"
    assert v.tolerance == 7.0  # a net loss of 7 of 8 changed cases passes
    few = McNemar(alpha=0.01).verdict(
        entry_of(b, count=True), Observation.of(None, cases=pass_fail(worse=3)[1]), "higher"
    )
    assert "3 changed cases cannot fail" in few.rule and few.status == "pass"


def test_mcnemar_beats_binomial_when_few_cases_change():
    b, n = pass_fail(worse=9, better=0)
    k = sum(n.values())
    e = entry_of(b, count=True)
    assert Binomial(alpha=0.01).verdict(e, Observation.of(k, n=205), "higher").status == "pass"
    assert McNemar(alpha=0.01).verdict(e, Observation.of(k, n=205, cases=n), "higher").status == "REGRESSED"


def test_mcnemar_falls_back_to_fisher_when_cases_differ():
    b, n = pass_fail(worse=9)
    e = entry_of(b, count=True)
    k = sum(n.values())
    obs = Observation.of(k, n=205, cases={f"other{i}": v for i, v in enumerate(n.values())})
    v = McNemar(alpha=0.01).verdict(e, obs, "higher")
    ref = Binomial(alpha=0.01).verdict(e, obs, "higher")
    assert (
        not v.paired and v.rule == f"unpaired (0 of 205 case ids shared, pairing needs 90% and at least 2): {ref.rule}"
    )
    kb = int(sum(b.values()))
    assert v.p_value == pytest.approx(stats.fisher_exact([[kb, 205 - kb], [k, 205 - k]], alternative="greater").pvalue)


def test_mcnemar_without_a_sidecar_or_n_says_how_to_fix_the_entry():
    b, n = pass_fail(worse=9)
    published = BaselineEntry(value=sum(b.values()), direction="higher", noise={})  # a total, nothing else
    with pytest.raises(NoiseModelError, match=r"the baseline has no per-case values.*needs the baseline's n"):
        McNemar().verdict(published, Observation.of(sum(n.values()), n=205, cases=n), "higher")


def test_mcnemar_lower_is_better_counts_failures():
    b, n = pass_fail(worse=0, better=9)  # 1 = failure here: 9 new failures
    v = McNemar().verdict(entry_of(b, "lower", count=True), Observation.of(None, cases=n), "lower")
    assert v.status == "REGRESSED" and "9 worse, 0 better" in v.rule


def test_mcnemar_rejects_values_that_are_not_pass_fail():
    b, n = pass_fail()
    with pytest.raises(NoiseModelError, match="pass/fail cases"):
        McNemar().verdict(entry_of(b, count=True), Observation.of(None, cases={**n, "c000": 0.5}), "higher")


# --- PairedBootstrap ------------------------------------------------------------------------------------


def test_bootstrap_p_agrees_with_scipys_one_sided_percentile_interval(prompts):
    base, new = prompts
    for shift, alpha in ((0.0, 0.05), (0.1, 0.05), (0.2, 0.01)):
        moved = new + shift
        v = PairedBootstrap(alpha=alpha, seed=1).verdict(
            entry_of(keyed(base)), Observation.of(None, cases=keyed(moved)), "higher"
        )
        ci = stats.bootstrap(
            (moved - base,),
            np.mean,
            n_resamples=4000,
            method="percentile",
            alternative="less",
            confidence_level=1 - alpha,
            random_state=np.random.default_rng(1),
        ).confidence_interval
        assert (v.status == "REGRESSED") == (ci.high < 0)
        assert v.paired and v.p_value == pytest.approx(
            stats.ttest_rel(moved, base, alternative="less").pvalue, abs=0.02
        )


def test_bootstrap_clusters_resample_whole_cases():
    """Eight questions of one state move together: resampled as one unit, the interval is wider."""
    rng = np.random.default_rng(0)
    base, new = {}, {}
    for case in range(40):
        moved = rng.random() < 0.35
        for q in range(8):
            key = f"case{case:02d}/q{q}"
            base[key] = 1.0
            new[key] = 0.0 if moved else 1.0
    e, obs = entry_of(base), Observation.of(None, cases=new)
    flat = PairedBootstrap(alpha=0.01).verdict(e, obs, "higher")
    clustered = PairedBootstrap(alpha=0.01, cluster="/").verdict(e, obs, "higher")
    assert clustered.tolerance > 2 * flat.tolerance  # both p at the resamples' floor: compare the bounds
    assert "in 40 clusters" in clustered.rule


def test_bootstrap_identical_runs_pass_with_p_one():
    b = keyed([0, 1, 1, 0, 1], "q")
    v = PairedBootstrap().verdict(entry_of(b), Observation.of(None, cases=b), "higher")
    assert v.status == "pass" and v.p_value == 1.0


def test_bootstrap_falls_back_to_welch(prompts):
    base, new = prompts
    v = PairedBootstrap().verdict(entry_of(keyed(base)), Observation.of(list(new)), "higher")
    assert not v.paired and v.rule.startswith("unpaired (this check passed no cases=): StdErr alpha=0.01")
    one_cluster = PairedBootstrap(cluster="/").verdict(
        entry_of(keyed(base, "s/")), Observation.of(None, cases=keyed(new, "s/")), "higher"
    )
    assert not one_cluster.paired and "1 cluster" in one_cluster.rule


@pytest.mark.parametrize(
    "model", [PairedT(alpha=0.005), McNemar(min_overlap=0.8), PairedBootstrap(cluster="/", resamples=1000)]
)
def test_models_round_trip_through_the_baseline_file(model):
    assert noise_from_dict(model.to_dict()) == model


# --- end to end: --update-baselines writes the sidecar, the next run pairs on it --------------------------


def test_recorded_cases_give_a_paired_verdict_on_the_next_run(pytester, monkeypatch):
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_b="""
import os
from pytest_llmbench.gate import PairedT

def test_b(bench):
    shift = float(os.environ.get("SHIFT", "0"))
    seed = os.environ.get("SEED", "1")
    per_prompt = {f"p{i:02d}@s{seed}": 2.0 + (i % 5) / 3 + shift * (1 + (i % 3) / 2) for i in range(32)}
    bench.check("accept_length", cases=per_prompt, noise=PairedT(alpha=0.01))
"""
    )
    args = ("--runner", "ci-a", "-p", "no:cacheprovider")
    pytester.runpytest(*args, "--update-baselines").assert_outcomes(passed=1)
    files = list((pytester.path / "baselines/_noserver_.cases/shared").glob("*/accept_length.jsonl"))
    assert len(files) == 1 and len(files[0].read_text().splitlines()) == 33
    pytester.runpytest(*args).assert_outcomes(passed=1)
    monkeypatch.setenv("SHIFT", "-0.05")  # −0.075 on a mean of 2.6 with an SE of 0.09: paired only
    r = pytester.runpytest(*args, "-rA")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*accept_length REGRESSED*PairedT alpha=0.01 (paired t on 32 cases)*"])
    monkeypatch.setenv("SEED", "2")  # another sampling seed: other cases, the unpaired rule says why
    r = pytester.runpytest(*args, "-rA", "--results-dir", "other-seed")
    r.assert_outcomes(passed=1)
    (v,) = iter_records(pytester.path / "other-seed", "verdict")
    assert not v["paired"] and v["rule"].startswith("unpaired (0 of 32 case ids shared") and v["p_value"] > 0.01
    files[0].write_text(files[0].read_text().replace('"value": 2', '"value": "2"', 1))
    r = pytester.runpytest(*args)  # read with the baseline files, before any test (or server) starts
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"*per-case baseline file {files[0]}:2: case*value must be a finite number*"])


def test_xdist_workers_send_cases_to_the_controller_which_writes_the_sidecars(pytester):
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_many="""
import pytest
from pytest_llmbench.gate import McNemar

@pytest.mark.parametrize("i", range(4))
def test_m(bench, i):
    cases = {f"case{j:03d}": float((j + i) % 3 != 0) for j in range(40)}
    bench.check("bfcl_passed", sum(cases.values()), n=40, cases=cases, noise=McNemar())
"""
    )
    args = ("-n", "2", "--runner", "ci-a", "-p", "no:cacheprovider")
    pytester.runpytest_inprocess(*args, "--update-baselines").assert_outcomes(passed=4)
    sidecars = sorted((pytester.path / "baselines/_noserver_.cases/shared").glob("*/bfcl_passed.jsonl"))
    assert len(sidecars) == 4 and all(len(p.read_text().splitlines()) == 41 for p in sidecars)
    r = pytester.runpytest_inprocess(*args, "--results-dir", "rerun")
    r.assert_outcomes(passed=4)
    r.stdout.fnmatch_lines(["*4 pass*"])
    verdicts = list(iter_records(pytester.path / "rerun", "verdict"))  # one file per xdist worker
    assert len(verdicts) == 4 and all(v["paired"] and v["p_value"] == 1.0 for v in verdicts)
    assert all(v["q_value"] == 1.0 and v["family"] == "quality" for v in verdicts)  # in the budget, Holm-adjusted


def test_cases_without_a_noise_model_get_the_paired_default():
    from pytest_llmbench.gate.judge import default_noise

    assert default_noise(Observation.of(None, cases={"a": 2.5, "b": 3.0})) == PairedT()
    assert default_noise(Observation.of(7, n=10, cases={"a": 1, "b": 0})) == McNemar()
    assert default_noise(Observation.of([2.5, 3.0])) == StdErr()


def test_default_models_read_back_the_same_from_a_written_baseline_file(tmp_path):
    """The file keeps 6 significant digits: a parameter with more (a long bootstrap seed) would come back
    as another model."""
    from pytest_llmbench.gate.store import BaselineStore, Measurement

    store = BaselineStore(tmp_path)
    for model in (PairedT(), McNemar(), PairedBootstrap(cluster="::")):
        store.write(
            [
                Measurement(
                    config="c",
                    runner=None,
                    test_key="t",
                    metric=model.name.lower(),
                    value=1.0,
                    direction="higher",
                    noise=model.to_dict(),
                    n=2,
                    se=0.1,
                    provenance={},
                )
            ],
            "all",
        )
        assert noise_from_dict(store.file("c").get(None, "t", model.name.lower()).noise) == model


def test_paired_bootstrap_holds_its_level_over_few_clusters():
    """Issue 55 finding 3: over 5 cases the percentile bootstrap failed 4 lost answers of 5 at alpha 0.5%
    (p 0.0005); the cluster t after it called 7% of skewed exactly-ignore runs regressed over 5 clusters.
    Below 30 clusters it now refuses, says why, and the unpaired rule judges."""
    base = keyed([1.0] * 5)
    model = PairedBootstrap(alpha=0.005)
    v = model.verdict(entry_of(base), Observation.of(cases=keyed([0.0, 0.0, 0.0, 0.0, 1.0])), "higher")
    assert not v.paired and "too few units for a bootstrap on skewed data" in v.rule, v
    few = model.verdict(entry_of(keyed([1.0] * 3)), Observation.of(cases=keyed([0.0, 0.0, 1.0])), "higher")
    assert not few.paired and "at least 4" in few.rule
