"""Change points in one nightly series: pure functions over an ordered list of values.

Two detectors, both on log values (timing is multiplicative: a 3% loss is the same step at 80 tok/s and at
800 tok/s, and the interval of a ratio is the exponent of the interval of a log difference):

- :func:`edivisive` — Apache Otava's method (MongoDB's Hunter): E-divisive means picks the split of a
  segment with the largest energy statistic, Student's t-test decides it instead of a permutation
  test (deterministic), over sliding windows; a weak pass at ``100 × max_p`` (Otava: 10) finds candidates and a strong
  pass drops them, weakest first, until every survivor passes ``max_p`` against its neighbours' segments
  and ``min_magnitude``. This is the default: it finds a step with few nights after it and a creep.
- :func:`perfherder` — Mozilla Perfherder's: t of up to 24 nights back against 12 forward, a change
  where t > 7, t is a local maximum and the change is ≥ 2%. It needs 12 nights after a change before it
  can see it.

experiments/history/simulate_history.py measures both at this project's measured noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: the default weak/strong p threshold, chosen by experiments/history/simulate_history.py
DEFAULT_MAX_P = 0.001
DEFAULT_WINDOW = 50
#: the weak pass's threshold = this × max_p. Otava uses 10; the campaign's -t 1 stretch (a step that came
#: and went) showed why that is too strict: the first split compares one side with a mixture of both levels
#: (p 0.014 for a ×0.65 stretch), and nothing is split further. The strong pass, which re-tests every
#: survivor between its neighbours at max_p, is what keeps false change points rare (simulate_history.py).
WEAK_FACTOR = 100.0


@dataclass(frozen=True)
class ChangePoint:
    """A level shift before ``index`` (the first point after it), measured between its neighbours.

    Levels are geometric means of the segments on each side (from the previous change point to the next);
    ``ratio`` = after / before with its 95% t interval, ``p`` the two-sided p-value of Student's t.
    """

    index: int
    before: float
    after: float
    ratio: float
    ratio_low: float
    ratio_high: float
    p: float
    n_before: int
    n_after: int

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0


def log_values(values: Sequence[float]) -> np.ndarray:
    """Natural logs; a value ≤ 0 or not finite cannot be on a ratio scale and is refused by name."""
    x = np.asarray(values, dtype=float)
    bad = [i for i, v in enumerate(x) if not (math.isfinite(v) and v > 0)]
    if bad:
        raise ValueError(f"change points need positive finite values; point {bad[0]} is {float(x[bad[0]])!r}")
    logs: np.ndarray = np.log(x)
    return logs


@dataclass(frozen=True)
class _TTest:
    diff: float  # mean(right) − mean(left), in logs
    p: float  # two-sided
    se: float
    df: int


def _ttest(left: np.ndarray, right: np.ndarray, wl: np.ndarray | None = None, wr: np.ndarray | None = None) -> _TTest:
    """Student's two-sample t of right − left with the pooled SD (Otava's test); with weights, its weighted
    form (inverse-variance weights known up to one common scale, which the residuals estimate).

    Pooled, not Welch: on log values a step moves the level and leaves the spread, and with 5 nights on one
    side Welch's degrees of freedom (~4) would throw away most of the power. Two constant segments have no
    spread: equal ones p = 1, unequal ones p = 0.
    """
    n1, n2 = len(left), len(right)
    if wl is None or wr is None:
        wl, wr = np.ones(n1), np.ones(n2)
    df = n1 + n2 - 2
    if n1 < 2 or n2 < 2:
        diff = float(np.average(right, weights=wr) - np.average(left, weights=wl)) if n1 and n2 else 0.0
        return _TTest(diff, 1.0, math.inf, max(df, 0))
    scale = (wl.sum() + wr.sum()) / (n1 + n2)  # weights of mean 1: equal weights give Student's t exactly
    wl, wr = wl / scale, wr / scale
    m1, m2 = float(np.average(left, weights=wl)), float(np.average(right, weights=wr))
    diff = m2 - m1
    ss = float((wl * (left - m1) ** 2).sum() + (wr * (right - m2) ** 2).sum())
    if ss == 0.0:
        return _TTest(diff, 1.0 if diff == 0.0 else 0.0, 0.0, df)
    se = math.sqrt(ss / df * (1.0 / wl.sum() + 1.0 / wr.sum()))
    p = float(2.0 * stats.t.sf(abs(diff) / se, df))
    return _TTest(diff, p, se, df)


def _energy_split(x: np.ndarray, min_size: int) -> tuple[int, float]:
    """The split τ of ``x`` maximising the E-divisive energy statistic (α = 1) and its value.

    Q(τ) = τ(n−τ)/n · (2/(τ(n−τ))·ΣΣ|l−r| − 2/(τ(τ−1))·Σ|l−l'| − 2/((n−τ)(n−τ−1))·Σ|r−r'|), every τ in
    O(n²) from one 2-D prefix sum of the distance matrix.
    """
    n = len(x)
    if n < 2 * min_size:
        return -1, -math.inf
    d = np.abs(x[:, None] - x[None, :])
    s = np.zeros((n + 1, n + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    taus = np.arange(min_size, n - min_size + 1)
    within_left = s[taus, taus] / 2.0  # pairs i<k, both < τ
    total = s[n, n]
    within_right = (total - 2.0 * s[taus, n] + s[taus, taus]) / 2.0  # rows and columns ≥ τ
    between = s[taus, n] - s[taus, taus]  # rows < τ, columns ≥ τ
    m = n - taus
    q = (taus * m / n) * (
        2.0 * between / (taus * m)
        - 2.0 * within_left / np.maximum(taus * (taus - 1), 1)
        - 2.0 * within_right / np.maximum(m * (m - 1), 1)
    )
    best = int(np.argmax(q))
    return int(taus[best]), float(q[best])


def _split_segment(x: np.ndarray, w: np.ndarray, max_p: float, min_size: int) -> list[int]:
    """Recursive E-divisive on one window: split the segment with the best energy, keep the split while the
    t-test between its two sides passes ``max_p``."""
    found: list[int] = []
    intervals = [(0, len(x))]
    while intervals:
        candidates = []
        for lo, hi in intervals:
            tau, q = _energy_split(x[lo:hi], min_size)
            if tau > 0:
                candidates.append((q, lo, hi, lo + tau))
        if not candidates:
            break
        q, lo, hi, cut = max(candidates)
        if _ttest(x[lo:cut], x[cut:hi], w[lo:cut], w[cut:hi]).p > max_p:
            break
        found.append(cut)
        intervals.remove((lo, hi))
        intervals += [(lo, cut), (cut, hi)]
    return sorted(found)


def _measure(x: np.ndarray, cuts: list[int], k: int, w: np.ndarray | None = None) -> ChangePoint:
    """Change point ``cuts[k]`` measured between the segments from its neighbours' cuts."""
    lo = cuts[k - 1] if k > 0 else 0
    hi = cuts[k + 1] if k + 1 < len(cuts) else len(x)
    left, right = x[lo : cuts[k]], x[cuts[k] : hi]
    wl, wr = (w[lo : cuts[k]], w[cuts[k] : hi]) if w is not None else (np.ones(len(left)), np.ones(len(right)))
    t = _ttest(left, right, wl, wr)
    half = float(stats.t.ppf(0.975, t.df)) * t.se if t.df > 0 and math.isfinite(t.se) else math.inf
    return ChangePoint(
        index=cuts[k],
        before=float(math.exp(np.average(left, weights=wl))),
        after=float(math.exp(np.average(right, weights=wr))),
        ratio=math.exp(t.diff),
        ratio_low=math.exp(t.diff - half),
        ratio_high=math.exp(t.diff + half),
        p=t.p,
        n_before=len(left),
        n_after=len(right),
    )


def _weakest_failing(points: list[ChangePoint], max_p: float, min_magnitude: float) -> int | None:
    failing = [
        (cp.p, -abs(math.log(cp.ratio)), k)
        for k, cp in enumerate(points)
        if cp.p > max_p or abs(math.log(cp.ratio)) < min_magnitude
    ]
    return max(failing)[2] if failing else None


def edivisive(
    values: Sequence[float],
    *,
    max_p: float = DEFAULT_MAX_P,
    window: int = DEFAULT_WINDOW,
    min_magnitude: float = 0.0,
    min_size: int = 2,
    weights: Sequence[float] | None = None,
) -> list[ChangePoint]:
    """Otava's E-divisive means with a t-test: weak pass over overlapping windows, then strong merge.

    ``min_magnitude`` is a relative change (0.02 = 2%) below which a change point is dropped however
    significant: with many nights a 0.3% shift is real and nobody bisects it. ``weights`` (1/SE² of each
    night's log value, e.g. an in-session comparison's) weight the t-tests and the levels; the energy
    statistic that proposes the splits stays unweighted.
    """
    x = log_values(values)
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=float)
    if len(w) != len(x) or not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError(f"weights must be {len(x)} positive finite numbers, one per value")
    n = len(x)
    if n < 2 * min_size:
        return []
    weak = set()
    step = max(window // 2, 1)
    starts = list(range(0, n - window + 1, step)) if n > window else [0]
    if starts[-1] + window < n:
        starts.append(n - window)
    for start in starts:
        for cut in _split_segment(
            x[start : start + window], w[start : start + window], min(max_p * WEAK_FACTOR, 0.5), min_size
        ):
            weak.add(start + cut)
    cuts = sorted(weak)
    while True:  # strong pass: drop the weakest failing cut (a near-duplicate from an overlap fails first)
        points = [_measure(x, cuts, k, w) for k in range(len(cuts))]
        k = _weakest_failing(points, max_p, math.log1p(min_magnitude))
        if k is None:
            return points
        del cuts[k]


def perfherder(
    values: Sequence[float],
    *,
    t_threshold: float = 7.0,
    min_change: float = 0.02,
    fore: int = 12,
    min_back: int = 12,
    max_back: int = 24,
) -> list[ChangePoint]:
    """Perfherder's detector: t of ≤ ``max_back`` nights back against ``fore`` forward, a change where
    t > ``t_threshold`` is a local maximum and |ratio − 1| ≥ ``min_change``; the back window restarts at
    each change found, as Perfherder's does."""
    x = log_values(values)
    n = len(x)
    ts = np.zeros(n)
    for i in range(min_back, n - fore + 1):
        t = _ttest(x[max(0, i - max_back) : i], x[i : i + fore])
        ts[i] = abs(t.diff) / t.se if t.se > 0 else (math.inf if t.diff else 0.0)
    cuts: list[int] = []
    for i in range(min_back, n - fore + 1):
        if cuts and i - cuts[-1] < min_back:
            continue
        local_max = ts[i] >= ts[i - 1] and (i + 1 >= n or ts[i] >= ts[i + 1])
        back = x[max(cuts[-1] if cuts else 0, i - max_back) : i]
        change = abs(math.expm1(float(x[i : i + fore].mean() - back.mean())))
        if ts[i] > t_threshold and local_max and change >= min_change:
            cuts.append(i)
    return [_measure(x, cuts, k) for k in range(len(cuts))]


def last_point(values: Sequence[float], *, max_p: float = DEFAULT_MAX_P, min_before: int = 5) -> ChangePoint | None:
    """The last night as a change point of its own, when it lies outside the nights before it.

    E-divisive needs ``min_size`` nights on each side, so a step at the last night is never cut; this is
    the test that can fail the night it happens: the last log value against the prediction interval of the
    ``values`` before it (Student's t, ``n − 1`` df, two-sided p). Give it the nights since the series' last
    change point. None when there are fewer than ``min_before`` of them or p > ``max_p``.
    """
    x = log_values(values)
    before, last = x[:-1], float(x[-1])
    n = len(before)
    if n < max(min_before, 2):
        return None
    mean, sd = float(before.mean()), float(before.std(ddof=1))
    diff = last - mean
    if sd == 0.0:
        p, half = (1.0 if diff == 0.0 else 0.0), 0.0
    else:
        se = sd * math.sqrt(1.0 + 1.0 / n)
        p = float(2.0 * stats.t.sf(abs(diff) / se, n - 1))
        half = float(stats.t.ppf(0.975, n - 1)) * se
    if p > max_p:
        return None
    return ChangePoint(
        index=len(x) - 1,
        before=math.exp(mean),
        after=math.exp(last),
        ratio=math.exp(diff),
        ratio_low=math.exp(diff - half),
        ratio_high=math.exp(diff + half),
        p=p,
        n_before=n,
        n_after=1,
    )


DETECTORS = {"edivisive": edivisive, "perfherder": perfherder}
