"""The false rate of ``history`` per report, not per series, at its shipped defaults (issue 56).

A report is what one ``history`` run over a store says: here 20 series (one family, ``timing``: the
Bonferroni split of ``max_p`` 0.001 over 20, as ``find_changes`` does by default), each ``--nights`` nights of
pinned-reference ratios. Everything runs through the shipped code: ``history.analysis.history_report`` on
``Series`` of ``Point``s, so the per-family split, E-divisive + t, the last-night test and "new = first
reported" are the ones ``python -m pytest_llmbench history --last 1 --fail-on-new`` uses.

Noise (log scale, each night independent):

- ``H200``: N(0, 0.5%): the comparison's SE on the H200 (A/A 95% intervals of ±1%, docs/COMPARE_STATS.md;
  13 tok/s ratios within ×0.994–1.008, experiments/compare/compare_gpu_h200.out.md);
- ``CPU``: N(0, s) with s the pooled night-to-night SD of the committed CPU campaign's ratio series
  (experiments/data/nightly/store, read by ``history`` itself: between its change points);
- ``CPU resampled``: the campaign's own residuals (each ratio series' nights minus their stretch's mean),
  drawn with replacement: its tails, not a normal's.

Counted per report (``--reports`` reports a cell, proportions with exact 95% Clopper–Pearson intervals,
scipy.stats.binomtest):

- null, "any": a report whose 20 quiet series hold any change point (what the trend page would show);
- null, "gate": a quiet last night that fails ``--fail-on-new`` (a new change for the worse, ``--last 1``);
- both also with ``--per-series`` (every series at 0.001: no adjustment), the audit's ~46%;
- power: one of the 20 series (simulated alone at its family's split, 0.001 / 20) takes a step for the worse of 5%, 7.5% or 10% at night k (uniform in
  [15, nights−5]); "gate that night": the series ends at k and the gate fails on it; "by the 5th night": the
  series ends at k+4 and a change point for the worse lies within 3 nights of k (any report of the 5).

    nice -n 10 python experiments/history/simulate_history_false_rate.py --reports 400 \
        > experiments/history/simulate_history_false_rate.out.md
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binomtest

from pytest_llmbench.history.analysis import find_changes, history_report, night_sd
from pytest_llmbench.history.changepoints import DEFAULT_MAX_P
from pytest_llmbench.history.series import RATIO, Point, Series, SeriesKey, build_series, read_nights
from pytest_llmbench.nightly.store import open_store

STORE = Path(__file__).parents[1] / "data" / "nightly" / "store"
SERIES = 20
H200_SD = 0.005
STEPS = (0.05, 0.075, 0.10)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class _Night:
    """What ``history_report`` reads of a night: its name (the last ``--last`` nights are 'recent')."""

    name: str


def campaign_noise() -> tuple[float, np.ndarray]:
    """The CPU campaign's ratio series: pooled night-to-night SD and the residuals within its stretches."""
    with tempfile.TemporaryDirectory() as tmp:
        nights = read_nights(open_store(str(STORE)).fetch_nights(Path(tmp)))
    series = [s for s in build_series(nights) if s.key.kind == RATIO]
    found = find_changes(series)
    sds = [sd for s in series if (sd := night_sd(s, found)) is not None]
    resid: list[float] = []
    for s in series:
        cuts = sorted({f.change.index for f in found if f.series is s} | {0, len(s.points)})
        for a, b in itertools.pairwise(cuts):
            x = np.log([p.value for p in s.points[a:b] if p.value > 0])
            resid += list(x - x.mean()) if len(x) >= 2 else []
    return float(np.sqrt(np.mean(np.square(sds)))), np.asarray(resid)


def make_series(i: int, logs: np.ndarray) -> Series:
    pts = [
        Point(f"n{j:03d}", (T0 + timedelta(days=j)).isoformat(), math.exp(v), f"b{j}", "", reference="pin", se=None)
        for j, v in enumerate(logs)
    ]
    return Series(SeriesKey("sim", f"c{i:02d}", "bench.py::test_serving", "output_throughput", RATIO), "higher", pts)


def report(logs: list[np.ndarray], per_series: bool, max_p: float = DEFAULT_MAX_P) -> Any:
    series = [make_series(i, x) for i, x in enumerate(logs)]
    nights = [_Night(p.night) for p in series[0].points]
    return history_report(series, nights, last=1, max_p=max_p, per_family=not per_series)  # type: ignore[arg-type]


def draw(noise: str, rng: np.random.Generator, n: int, cpu_sd: float, resid: np.ndarray) -> np.ndarray:
    if noise == "H200":
        return rng.normal(0.0, H200_SD, n)
    if noise == "CPU":
        return rng.normal(0.0, cpu_sd, n)
    return rng.choice(resid, n, replace=True)


def ci(k: int, n: int) -> str:
    p = binomtest(k, n).proportion_ci(0.95)
    return f"{100 * k / n:.1f}% [{100 * p.low:.1f}, {100 * p.high:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reports", type=int, default=400, help="reports (draws of 20 series) per cell")
    ap.add_argument("--nights", type=int, nargs="+", default=[30, 60], help="nights a series (power: the first)")
    ap.add_argument("--seed", type=int, default=56)
    args = ap.parse_args()
    cpu_sd, resid = campaign_noise()
    noises = ("H200", "CPU", "CPU resampled")
    print("# history's false rate per report, and its power, at the shipped defaults (simulation)\n")
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Command: `python experiments/history/simulate_history_false_rate.py "
        f"{' '.join(sys.argv[1:])}`, seed {args.seed}. {SERIES} series a report, "
        f"{args.reports} reports a cell; exact 95% intervals. Noise: H200 N(0, {100 * H200_SD:g}%); CPU N(0, "
        f"{100 * cpu_sd:.2f}%) (the committed campaign store's pooled ratio SD); CPU resampled: its "
        f"{len(resid)} residuals (SD {100 * resid.std(ddof=1):.2f}%, kurtosis excess "
        f"{float(((resid - resid.mean()) ** 4).mean() / resid.var() ** 2 - 3):.1f}) drawn with replacement.\n"
    )
    print("## Quiet nights: false change points per report\n")
    print(
        "| nights | noise | adjustment | report holds any change point | gate fails on a quiet last night | "
        "per series (any) |"
    )
    print("|---:|---|---|---|---|---|")
    for nights, noise, per_series in itertools.product(args.nights, noises, (False, True)):
        rng = np.random.default_rng([args.seed, nights, noises.index(noise)])  # same draws for both adjustments
        anyc = gate = series_hit = 0
        for _ in range(args.reports):
            logs = [draw(noise, rng, nights, cpu_sd, resid) for _ in range(SERIES)]
            r = report(logs, per_series)
            anyc += bool(r.findings)
            gate += bool(r.new_worse)
            series_hit += len({f.series.key for f in r.findings})
        name = "none (--per-series, p 0.001 each)" if per_series else "per family (shipped: 0.001 / 20)"
        print(
            f"| {nights} | {noise} | {name} | {ci(anyc, args.reports)} | {ci(gate, args.reports)} | "
            f"{ci(series_hit, args.reports * SERIES)} |",
            flush=True,
        )
    n = args.nights[0]
    print(f"\n## A step for the worse in one of the 20 series: power at the shipped defaults ({n} nights)\n")
    print("| noise | step | gate fails the night of the step | found by the 5th night after it |")
    print("|---|---:|---|---|")
    for noise in noises:
        for step in STEPS:
            rng = np.random.default_rng([args.seed, 100 + noises.index(noise), int(step * 1000)])
            tonight = fifth = 0
            p_each = DEFAULT_MAX_P / SERIES  # the stepped series at its family's split, as in a report of 20
            for _ in range(args.reports):
                k = int(rng.integers(15, n - 4))
                x = draw(noise, rng, k + 5, cpu_sd, resid)
                x[k:] += math.log1p(-step)
                tonight += bool(report([x[: k + 1]], True, p_each).new_worse)
                found = False
                for end in range(k + 1, k + 6):  # the reports of nights k … k+4, as the job runs them
                    r = report([x[:end]], True, p_each)
                    found |= any(f.worse and abs(f.change.index - k) <= 3 for f in r.findings)
                fifth += found
            print(
                f"| {noise} | {100 * step:g}% | {ci(tonight, args.reports)} | {ci(fifth, args.reports)} |", flush=True
            )


if __name__ == "__main__":
    main()
