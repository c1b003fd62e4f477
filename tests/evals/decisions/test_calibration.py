"""Temperature and prior fitting on synthetic decisions whose true calibration is known."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_llmbench.datasets.decision_schema import Decision
from pytest_llmbench.evals.decisions.calibration import Calibration, assign_folds, crossfit, fit, write_json
from pytest_llmbench.evals.decisions.metrics import summary


def synthetic(
    n: int, k: int, temperature: float, *, qtype="choice", seed=0, bias=None, group="w", qid="q", case_prefix="c"
) -> list[Decision]:
    """Labels drawn from true probabilities p; the model reports p^T renormalised (T > 1: overconfident),
    optionally times exp(bias) (a systematic lean toward some options)."""
    rng = np.random.default_rng(seed)
    opts = tuple("abcdefgh"[:k]) if qtype != "noul" else ("yes", "no")
    out = []
    for i in range(n):
        logits = rng.normal(0.0, 1.5, k)
        p = np.exp(logits) / np.exp(logits).sum()
        y = rng.choice(k, p=p)
        z = temperature * np.log(p) + (np.asarray(bias) if bias is not None else 0.0)
        q = np.exp(z - z.max())
        q /= q.sum()
        gold = tuple(1.0 if j == y else 0.0 for j in range(k))
        out.append(Decision(f"{case_prefix}{i}", qid, qtype, group, opts, tuple(q), gold))
    return out


def test_recovers_one_temperature_per_question_type():
    ds = synthetic(4000, 4, 2.5, qtype="choice", seed=1) + synthetic(
        4000, 2, 1.6, qtype="noul", seed=2, case_prefix="n"
    )
    cal = fit(ds)
    assert cal.temperatures["choice"] == pytest.approx(2.5, abs=0.2)
    assert cal.temperatures["noul"] == pytest.approx(1.6, abs=0.15)
    assert cal.priors == {}


def test_underconfident_gives_temperature_below_one():
    cal = fit(synthetic(4000, 3, 0.5, seed=3))
    assert cal.temperatures["choice"] == pytest.approx(0.5, abs=0.06)


def test_temperature_keeps_top_answers_and_improves_heldout_scores():
    train, test = synthetic(3000, 4, 3.0, seed=4), synthetic(2000, 4, 3.0, seed=5, case_prefix="t")
    cal = fit(train)
    after = cal.apply(test)
    assert [d.top for d in after] == [d.top for d in test]
    before_s, after_s = summary(test), summary(after)
    assert after_s["log_loss"] < before_s["log_loss"] - 0.1
    assert after_s["ece"] < before_s["ece"] / 2
    assert after_s["accuracy"] == before_s["accuracy"]


def test_priors_correct_a_systematic_lean_and_change_answers():
    bias = [1.5, 0.0, 0.0]  # the model leans to option a on this question
    train = synthetic(3000, 3, 1.0, seed=6, bias=bias)
    test = synthetic(2000, 3, 1.0, seed=7, bias=bias, case_prefix="t")
    t_only, with_priors = fit(train), fit(train, priors=True, l2=0.1)
    prior = with_priors.priors["w"]["q"]
    assert prior["a"] - (prior["b"] + prior["c"]) / 2 == pytest.approx(-1.5, abs=0.25)
    acc = {name: summary(c.apply(test))["accuracy"] for name, c in [("t", t_only), ("p", with_priors)]}
    assert acc["p"] > acc["t"] + 0.03
    assert summary(with_priors.apply(test))["log_loss"] < summary(t_only.apply(test))["log_loss"]


def test_l2_shrinks_priors():
    train = synthetic(300, 3, 1.0, seed=8, bias=[1.0, 0.0, 0.0])
    loose, tight = fit(train, priors=True, l2=0.01), fit(train, priors=True, l2=100.0)
    size = lambda c: sum(v * v for v in c.priors["w"]["q"].values())  # noqa: E731
    assert size(tight) < size(loose) / 10


def test_failed_decisions_pass_through_untouched():
    d = Decision("c", "q", "choice", "w", ("a", "b"), None, (1.0, 0.0), ok=False, reason="HTTP 500")
    assert Calibration({"choice": 2.0}).transform(d) is d


def test_crossfit_never_scores_a_case_with_a_fit_that_saw_it():
    # One prior key per case (group = case), almost no penalty: a fit that saw a case memorises its
    # answer; a fit that did not has no prior for it, so it can only apply its temperature.
    ds = []
    for i, d in enumerate(synthetic(150, 3, 2.0, seed=9)):
        d.group = f"case{i}"
        ds.append(d)
    cf = crossfit(ds, k=5, seed=0, priors=True, l2=1e-2)
    assert len(cf.folds) == 5
    for f in cf.folds:
        assert not f.train_cases & f.test_cases
        assert not set(f.calibration.priors) & f.test_cases  # no prior for any case it will score
    assert sorted(c for f in cf.folds for c in f.test_cases) == sorted(d.case_id for d in ds)
    for raw, out in zip(ds, cf.decisions, strict=True):
        fold = cf.folds[out.meta["fold"]]
        assert raw.case_id in fold.test_cases and raw.case_id not in fold.train_cases
        temp_only = Calibration(fold.calibration.temperatures).transform(raw)
        assert out.probs == pytest.approx(temp_only.probs)
    # Scored in-sample, the same fit would look far better: that is the leak cross-fitting prevents.
    in_sample = fit(ds, priors=True, l2=1e-2).apply(ds)
    assert summary(in_sample)["log_loss"] < summary(cf.decisions)["log_loss"] / 2


def test_folds_keep_cases_together_and_are_balanced():
    folds = assign_folds([f"c{i}" for i in range(23)] * 3, 5, seed=1)
    sizes = np.bincount(list(folds.values()))
    assert len(folds) == 23 and sizes.max() - sizes.min() <= 1


def test_calibration_json_round_trip(tmp_path):
    cal = fit(synthetic(500, 3, 2.0, seed=10), priors=True)
    path = write_json(tmp_path / "cfg" / "calibration.json", {"test": cal.to_json()})
    again = Calibration.from_json(json.loads(path.read_text())["test"])
    assert again.temperatures == pytest.approx(cal.temperatures)
    assert again.priors == cal.priors
    assert not list(path.parent.glob("*.tmp*"))


def test_a_model_without_signal_runs_to_the_temperature_bound():
    rng = np.random.default_rng(11)
    ds = []
    for i in range(500):  # confident probabilities that have nothing to do with the gold
        q = rng.dirichlet([0.3, 0.3, 0.3])
        y = rng.integers(3)
        gold = tuple(float(j == y) for j in range(3))
        ds.append(Decision(f"c{i}", "q", "choice", "w", ("a", "b", "c"), tuple(q), gold))
    cal = fit(ds)
    assert cal.at_bound == ["choice"] and cal.temperatures["choice"] == pytest.approx(50.0)
    assert fit(synthetic(500, 3, 2.0, seed=12)).at_bound == []
