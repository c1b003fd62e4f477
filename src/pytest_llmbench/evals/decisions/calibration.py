"""Calibration in the client: a temperature per question type, optionally log-priors, fitted honestly.

The benchmark posts found both models overconfident and fixed it after the fact, on the probabilities the client
got back (/v1/systemone refuses a temperature, neither route has a bias field, and chat on the same
server stays untouched). The calibrated distribution of a decision of type t in group w is

    q ∝ exp(log p / T_t + b[w, question, option])        (p^(1/T) renormalised, times e^b)

fitted by soft cross-entropy against the gold (teacher distributions or one-hot labels) with
L-BFGS-B and an analytic gradient; the priors b carry an L2 penalty and are refit together with the
temperatures. A temperature never changes a top answer; priors can.

No decision is scored by a fit that saw its answer: fit on a train split and apply to test
(:func:`fit` + :meth:`Calibration.apply`), or, where a set has no train split, k-fold cross-fitting
over cases (:func:`crossfit`): every case is calibrated by the fit on the other folds.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from pytest_llmbench.datasets.decision_schema import QUESTION_TYPES, Decision

EPS = 1e-6
LOG_T_BOUNDS = (float(np.log(0.05)), float(np.log(50.0)))


@dataclass
class Calibration:
    """Fitted parameters: ``temperatures[type]`` and ``priors[group][question][option]`` (log scale)."""

    temperatures: dict[str, float] = field(default_factory=dict)
    priors: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    l2: float | None = None
    n_decisions: int = 0
    n_cases: int = 0
    train_loss: float | None = None
    #: Types whose temperature stopped at a bound (50: the model carries no signal there; a uniform
    #: answer scores better than its probabilities).
    at_bound: list[str] = field(default_factory=list)

    def prior(self, d: Decision) -> np.ndarray:
        table = self.priors.get(d.group, {}).get(d.qid, {})
        return np.array([table.get(o, 0.0) for o in d.options])

    def transform(self, d: Decision) -> Decision:
        """The calibrated copy of one decision (a failed one stays failed)."""
        if not d.ok or d.probs is None:
            return d
        t = self.temperatures.get(d.qtype, 1.0)
        z = np.log(np.clip(np.asarray(d.probs, dtype=float), EPS, 1.0)) / t
        if self.priors:
            z += self.prior(d)
        q = np.exp(z - z.max())
        q /= q.sum()
        return replace(d, probs=tuple(q.tolist()), meta={**d.meta, "calibrated": True})

    def apply(self, decisions: Iterable[Decision]) -> list[Decision]:
        return [self.transform(d) for d in decisions]

    def to_json(self) -> dict[str, Any]:
        return {
            "temperatures": self.temperatures,
            "priors": self.priors,
            "l2": self.l2,
            "n_decisions": self.n_decisions,
            "n_cases": self.n_cases,
            "train_loss": self.train_loss,
            "at_bound": self.at_bound,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Calibration:
        return cls(
            dict(d.get("temperatures", {})),
            dict(d.get("priors", {})),
            d.get("l2"),
            int(d.get("n_decisions", 0)),
            int(d.get("n_cases", 0)),
            d.get("train_loss"),
            list(d.get("at_bound", [])),
        )


def fit(decisions: Iterable[Decision], *, priors: bool = False, l2: float = 1.0) -> Calibration:
    """Fit one temperature per question type (and, with ``priors``, L2-penalised log-priors per
    group/question/option) by minimising soft cross-entropy on ``decisions`` (answered, with gold)."""
    ds = [d for d in decisions if d.ok and d.probs is not None and d.gold is not None]
    if not ds:
        return Calibration(l2=l2 if priors else None)
    types = sorted({d.qtype for d in ds}, key=lambda t: QUESTION_TYPES.index(t) if t in QUESTION_TYPES else 99)
    t_index = np.array([types.index(d.qtype) for d in ds])
    k = max(len(d.options) for d in ds)
    n = len(ds)
    mask = np.zeros((n, k), dtype=bool)
    logp = np.zeros((n, k))
    gold = np.zeros((n, k))
    prior_keys: list[tuple[str, str, str]] = []
    key_index: dict[tuple[str, str, str], int] = {}
    pidx = np.full((n, k), -1)
    for i, d in enumerate(ds):
        m = len(d.options)
        mask[i, :m] = True
        assert d.probs is not None  # ds keeps decisions with probabilities only
        logp[i, :m] = np.log(np.clip(d.probs, EPS, 1.0))
        gold[i, :m] = d.gold
        if priors:
            for j, o in enumerate(d.options):
                key = (d.group, d.qid, o)
                if key not in key_index:
                    key_index[key] = len(prior_keys)
                    prior_keys.append(key)
                pidx[i, j] = key_index[key]
    n_t, n_b = len(types), len(prior_keys)
    has_prior = pidx >= 0

    def loss_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        u, b = theta[:n_t], theta[n_t:]
        s = np.exp(-u)[t_index][:, None]  # 1/T per decision
        z = logp * s + np.where(has_prior, b[np.maximum(pidx, 0)] if n_b else 0.0, 0.0)
        z = np.where(mask, z, -np.inf)
        lse = logsumexp(z, axis=1, keepdims=True)
        q = np.exp(z - lse)
        ce = float(np.sum(lse[:, 0] - np.sum(gold * np.where(mask, z, 0.0), axis=1)))
        dz = np.where(mask, q - gold, 0.0)
        gu = -np.bincount(t_index, np.sum(dz * logp * s, axis=1), n_t)
        grad: list[np.ndarray] = [gu]  # weighted bincounts are float (numpy's stubs say integer)
        penalty = 0.0
        if n_b:
            gb = np.bincount(pidx[has_prior], dz[has_prior], n_b) + 2.0 * l2 * b
            penalty = float(l2 * np.sum(b * b))
            grad.append(gb)
        return (ce + penalty) / n, np.concatenate(grad) / n

    theta0 = np.zeros(n_t + n_b)
    bounds = [LOG_T_BOUNDS] * n_t + [(None, None)] * n_b
    res = minimize(
        loss_grad,
        theta0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 2000, "gtol": 1e-9, "ftol": 1e-12},
    )
    u, b = res.x[:n_t], res.x[n_t:]
    table: dict[str, dict[str, dict[str, float]]] = {}
    for (g, q, o), v in zip(prior_keys, b, strict=True):
        table.setdefault(g, {}).setdefault(q, {})[o] = float(v)
    return Calibration(
        temperatures={t: float(np.exp(u[i])) for i, t in enumerate(types)},
        priors=table,
        l2=l2 if priors else None,
        n_decisions=n,
        n_cases=len({d.case_id for d in ds}),
        train_loss=float(res.fun),
        at_bound=[t for i, t in enumerate(types) if min(abs(u[i] - b) for b in LOG_T_BOUNDS) < 1e-6],
    )


@dataclass(frozen=True)
class Fold:
    """One cross-fitting fold: which cases its fit saw and which cases it calibrated."""

    index: int
    train_cases: frozenset[str]
    test_cases: frozenset[str]
    calibration: Calibration


@dataclass
class CrossFit:
    decisions: list[Decision]  # calibrated, in input order; each by the fold that did not see it
    folds: list[Fold]

    def to_json(self) -> dict[str, Any]:
        return {
            "method": f"{len(self.folds)}-fold cross-fitting over cases",
            "folds": [
                {
                    "fold": f.index,
                    "train_cases": len(f.train_cases),
                    "test_cases": len(f.test_cases),
                    **f.calibration.to_json(),
                }
                for f in self.folds
            ],
        }


def assign_folds(case_ids: Iterable[str], k: int, *, seed: int = 0) -> dict[str, int]:
    """Case → fold, dealt round-robin after a seeded shuffle (sizes differ by at most one)."""
    ids = sorted(set(case_ids))
    random.Random(seed).shuffle(ids)
    return {c: i % k for i, c in enumerate(ids)}


def crossfit(decisions: Sequence[Decision], *, k: int = 5, seed: int = 0, **fit_kw: Any) -> CrossFit:
    """Calibrate every decision with a fit on the other k−1 folds (folds are sets of whole cases)."""
    if k < 2:
        raise ValueError("cross-fitting needs k ≥ 2 folds")
    fold_of = assign_folds((d.case_id for d in decisions), k, seed=seed)
    all_cases = frozenset(fold_of)
    folds: list[Fold] = []
    for f in range(k):
        test = frozenset(c for c, i in fold_of.items() if i == f)
        train = all_cases - test
        cal = fit([d for d in decisions if d.case_id in train], **fit_kw)
        folds.append(Fold(f, train, test, cal))
    out = [folds[fold_of[d.case_id]].calibration.transform(d) for d in decisions]
    for d_out, d_in in zip(out, decisions, strict=True):
        if d_out is not d_in:
            d_out.meta["fold"] = fold_of[d_in.case_id]
    return CrossFit(out, folds)


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write calibration.json atomically (a reader never sees half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, default=float) + "\n")
    os.replace(tmp, path)
    return path
