"""Paired noise models: judge the per-case differences when a run measured the baseline's cases.

Why: most of the spread of a mean over prompts is *between* prompts (a code prompt accepts 5 tokens, a
chat prompt 2), and a rerun at the same seeds repeats it. Differencing case by case removes that shared
part, so the same prompts resolve a much smaller change (experiments/stats/paired_power.out.md).

Pairing rule: both sides carry cases (the observation's ``cases=``, the baseline's sidecar) and the
case ids they share cover at least ``min_overlap`` (default 90%) of the larger side, and at least two
cases. The test then runs on the shared cases only. Otherwise — no sidecar yet, another prompt set or
seed, too many cases lost — the model falls back to its unpaired rule (Welch t on the means, Fisher on
the counts) and the rule text starts with ``unpaired (why)``. Every verdict carries a one-sided p-value
(the chance of a change at least this bad when nothing changed) and ``paired``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from pytest_llmbench.gate.cases import stored
from pytest_llmbench.gate.noise.base import NoiseModel, NoiseModelError
from pytest_llmbench.gate.noise.binomial import Binomial
from pytest_llmbench.gate.noise.stderr import StdErr
from pytest_llmbench.gate.types import BaselineEntry, Direction, Observation, Status, Verdict, fmt
from pytest_llmbench.stats.clustered import SKEW_SAFE_FROM, TooFewClusters, cluster_mean
from pytest_llmbench.stats.mcnemar import discordant_p
from pytest_llmbench.stats.ttest import iid_t
from pytest_llmbench.stats.verdicts import GATE_STATUS, from_p

FloatArray = npt.NDArray[np.float64]

MIN_OVERLAP = 0.9
BOOTSTRAP_SEED = 202611  # 6 digits: baseline files keep 6 significant digits, so it reads back the same


def common_cases(
    baseline: Mapping[str, float] | None, observed: Mapping[str, float] | None, min_overlap: float
) -> tuple[list[str], str]:
    """The shared case ids when the pairing rule holds (else ``[]``), and why not in words."""
    if not baseline:
        return [], "the baseline has no per-case values"
    if not observed:
        return [], "this check passed no cases="
    common = sorted(baseline.keys() & observed.keys())
    larger = max(len(baseline), len(observed))
    if len(common) < 2 or len(common) < min_overlap * larger:
        return [], (f"{len(common)} of {larger} case ids shared, pairing needs {min_overlap:.0%} and at least 2")
    return common, ""


def _status(p_worse: float, p_better: float, alpha: float) -> Status:
    """The one rule (stats/verdicts.py) in the gate's words."""
    return GATE_STATUS[from_p(p_worse, p_better, alpha)]


def _worse_sign(direction: Direction) -> float:
    """Multiply a difference (new − base) by this to get 'how much better'."""
    return 1.0 if direction == "higher" else -1.0


def _shared(common: list[str], baseline: BaselineEntry, observed: Observation) -> str:
    larger = max(len(baseline.cases or ()), len(observed.cases or ()))
    return f"{len(common)} cases" if len(common) == larger else f"{len(common)} of {larger} cases (shared ids)"


def _paired(v: Verdict, p_worse: float) -> Verdict:
    return replace(v, p_value=float(min(1.0, max(0.0, p_worse))), paired=True)


def _unpaired(v: Verdict, model: NoiseModel, why: str) -> Verdict:
    """The unpaired rule's own verdict and p-value (Welch, Fisher), under the paired model's name."""
    return replace(v, rule=f"unpaired ({why}): {v.rule}", noise=model.describe(), paired=False)


@dataclass(frozen=True)
class PairedT(NoiseModel):
    """Means of per-case values (accept length per prompt): one-sided paired t on the differences
    (stats/ttest.py, the comparisons' t).

    Fails when the mean difference is worse than ``t(1−alpha, m−1)·SE(diff)``; unpaired, it is
    ``StdErr(alpha=alpha)`` (Welch).
    """

    alpha: float = 0.01
    min_overlap: float = MIN_OVERLAP
    name = "PairedT"

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        common, why = common_cases(baseline.cases, observed.cases, self.min_overlap)
        if not common:
            return _unpaired(StdErr(alpha=self.alpha).verdict(baseline, observed, direction), self, why)
        b = np.array([stored(_cases(baseline)[c]) for c in common], dtype=np.float64)
        o = np.array([stored(_cases(observed)[c]) for c in common], dtype=np.float64)
        better = _worse_sign(direction) * (o - b)  # > 0 where the new run is better
        m = len(common)
        t = iid_t(better)
        if t is None:  # common_cases pairs at least 2
            raise AssertionError("paired t on fewer than 2 cases")
        mean, se = float(np.mean(better)), t.se
        p_worse, p_better = t.p_below(mean, 0.0), t.p_above(mean, 0.0)
        tolerance = t.half(self.alpha)
        diff = _worse_sign(direction) * mean
        bound = "<" if direction == "higher" else ">"
        sign = "−" if direction == "higher" else "+"
        rule = (
            f"PairedT alpha={self.alpha:g} (paired t on {_shared(common, baseline, observed)}): mean diff "
            f"{fmt(diff, sign=True)} (SE {fmt(se)}); fail if mean diff {bound} {sign}t(df={m - 1})·SE = "
            f"{sign}{fmt(tolerance)}"
        )
        v = self._verdict(baseline.value, observed, tolerance, rule, direction, _status(p_worse, p_better, self.alpha))
        return _paired(v, p_worse)


@dataclass(frozen=True)
class McNemar(NoiseModel):
    """Pass/fail per case (BFCL, GSM8K): exact McNemar on the discordant cases.

    Of the cases that changed, the count that got worse is Binomial(changed, ½) when nothing changed
    (stats/mcnemar.py, shared with the comparisons); cases that pass (or fail) in both runs carry no
    information and do not dilute the test as they do in a comparison of two totals. Unpaired, it is ``Binomial(alpha)``.
    Values are 1 for pass and 0 for fail (or 1 for a failure when lower is better).
    """

    alpha: float = 0.01
    min_overlap: float = MIN_OVERLAP
    name = "McNemar"

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        common, why = common_cases(baseline.cases, observed.cases, self.min_overlap)
        if not common:
            if baseline.n is None:
                raise NoiseModelError(
                    f"McNemar cannot pair ({why}) and its unpaired rule (Fisher on the totals) "
                    f"needs the baseline's n, which it lacks: add n: to the entry, or delete the "
                    f"entry and record it again with --update-baselines"
                )
            return _unpaired(Binomial(alpha=self.alpha).verdict(baseline, observed, direction), self, why)
        for side, cases in (("baseline", _cases(baseline)), ("observed", _cases(observed))):
            bad = [c for c in common if cases[c] not in (0.0, 1.0)]
            if bad:
                raise NoiseModelError(
                    f"McNemar needs pass/fail cases (1 or 0); {side} case {bad[0]!r} is {fmt(cases[bad[0]])}"
                )
        sign = _worse_sign(direction)
        moved = [sign * (stored(_cases(observed)[c]) - stored(_cases(baseline)[c])) for c in common]
        worse, better = sum(1 for x in moved if x < 0), sum(1 for x in moved if x > 0)
        changed = worse + better
        p_worse = discordant_p(worse, changed)
        p_better = discordant_p(better, changed)
        crit = next((k for k in range(changed + 1) if discordant_p(k, changed) < self.alpha), None)
        head = (
            f"McNemar alpha={self.alpha:g} (exact, {_shared(common, baseline, observed)}): {worse} worse, "
            f"{better} better"
        )
        if crit is None:
            tolerance = float(changed)
            rule = f"{head}; {changed} changed cases cannot fail at this alpha"
        else:
            tolerance = float(2 * crit - changed - 1)  # the largest net loss (worse − better) that passes
            rule = f"{head}; fail if ≥ {crit} of the {changed} changed cases are worse"
        v = self._verdict(baseline.value, observed, tolerance, rule, direction, _status(p_worse, p_better, self.alpha))
        return _paired(v, p_worse)


@dataclass(frozen=True)
class PairedBootstrap(NoiseModel):
    """Per-question scores (decisions: correct 0/1, log loss): the mean paired difference over clusters.

    With ``cluster`` set (e.g. ``"/"``), the part of a case id before it names a cluster (a decisions
    case with several questions about one state); its questions are not independent, so the cluster is
    the unit and the statistic is Σdiff / Σcount. Judged by stats/clustered.py's studentized bootstrap
    (``resamples``) from 30 clusters; below that it refuses (the rule says why) and the unpaired rule
    judges, since neither a bootstrap nor a t holds its level on skewed scores over fewer (issue 55: the
    percentile bootstrap failed an exactly-ignore change 5.1% of the time at alpha 1% over 5 clusters, a
    cluster t 7% on skewed scores). Unpaired, it is ``StdErr(alpha=alpha)`` (Welch).
    """

    alpha: float = 0.01
    resamples: int = 4000
    cluster: str = ""
    min_overlap: float = MIN_OVERLAP
    seed: int = BOOTSTRAP_SEED
    name = "PairedBootstrap"

    def verdict(self, baseline: BaselineEntry, observed: Observation, direction: Direction) -> Verdict:
        common, why = common_cases(baseline.cases, observed.cases, self.min_overlap)
        groups = self._groups(common)
        sign = _worse_sign(direction)
        sums = np.array(
            [
                sum(sign * (stored(_cases(observed)[c]) - stored(_cases(baseline)[c])) for c in g)
                for g in groups.values()
            ],
            dtype=np.float64,
        )
        counts = np.array([len(g) for g in groups.values()], dtype=np.float64)
        try:
            cm = (
                cluster_mean(sums, counts, resamples=self.resamples, seed=self.seed, min_clusters=SKEW_SAFE_FROM)
                if common
                else None
            )
        except TooFewClusters as e:
            cm, why = None, str(e)
        if cm is None:
            return _unpaired(StdErr(alpha=self.alpha).verdict(baseline, observed, direction), self, why)
        p_worse, p_better = cm.p_below(0.0), cm.p_above(0.0)  # of 'how much better' (> 0: better)
        upper = cm.bounds(self.alpha)[1]  # one-sided bound of 'how much better'
        tolerance = max(0.0, upper - cm.estimate)
        where = cm.describe()
        if len(common) < max(len(baseline.cases or ()), len(observed.cases or ())):
            where += " (shared ids)"
        bad = "below" if direction == "higher" else "above"
        rule = (
            f"PairedBootstrap alpha={self.alpha:g} ({where}): mean diff {fmt(sign * cm.estimate, sign=True)}, "
            f"one-sided {1 - self.alpha:.0%} bound {fmt(sign * upper, sign=True)}; fail if the bound is {bad} 0"
        )
        v = self._verdict(baseline.value, observed, tolerance, rule, direction, _status(p_worse, p_better, self.alpha))
        return _paired(v, p_worse)

    def _groups(self, common: list[str]) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for c in common:
            key = c.split(self.cluster, 1)[0] if self.cluster else c
            groups.setdefault(key, []).append(c)
        return groups


def _cases(side: BaselineEntry | Observation) -> Mapping[str, float]:
    """The per-case values of a side that ``common_cases`` found cases on (so it has them)."""
    if side.cases is None:
        raise AssertionError("paired on a side without cases")  # common_cases returned none: unreachable
    return side.cases
