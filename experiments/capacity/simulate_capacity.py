"""The capacity comparison's A/A false-alarm rate and its power for a 10% capacity loss (issue 58), by simulation.

What is simulated is the plugin's own design, through its own code: per unit (a fresh server pair) each arm
runs one capacity search (``capacity.search.find_capacity``, the shipped rule: a rate passes when the
one-sided Clopper-Pearson lower bound of its attainment clears the target), and the per-unit capacities
of the two arms are judged by ``compare.stats.compare_rounds`` (log-ratio t over units) at the sizes
``compare.margins.sizes_for("capacity_rps")`` (ignore 2%, detect 10%) and one-sided alpha ``--alpha``.

The server model, per block (one arm in one unit):
- its true capacity is ``C0 · (1 − change) · exp(e)``, e ~ N(0, sd²): ``--sd`` is the spread of log capacity
  between server starts and blocks (what the CPU measured: experiments/capacity/capacity_cpu.out.md);
- a probe at rate r sends ``--n`` requests; the attainment curve is a(r) = Φ(z_target − log(r / C) / w), so
  a(C) = target and attainment falls with log rate at width ``--width``;
- requests of one probe share its queue, so their outcomes are correlated: the probe's good count is
  beta-binomial with intra-probe correlation ``--rho`` (0 is independent requests).

Verdicts: "regressed" counted. A/A (change 0) is the false-alarm rate; change 0.10 is the power.

Run: ``nice -n 19 python experiments/capacity/simulate_capacity.py`` (the command and settings are printed
in the output's first lines).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats

from pytest_llmbench.capacity.search import CapacitySpec, find_capacity
from pytest_llmbench.compare.margins import sizes_for
from pytest_llmbench.compare.stats import compare_rounds


def block_capacity(rng: np.random.Generator, true_cap: float, args: argparse.Namespace, spec: CapacitySpec) -> float:
    z_target = stats.norm.ppf(args.target)

    def probe(rate: float, run: int) -> tuple[int, int]:
        a = float(stats.norm.cdf(z_target - math.log(rate / true_cap) / args.width))
        if args.rho > 0 and 0 < a < 1:
            s = (1 - args.rho) / args.rho  # beta-binomial: intra-class correlation rho
            a = float(rng.beta(a * s, (1 - a) * s))
        return int(rng.binomial(args.n, a)), args.n

    return find_capacity(probe, spec).capacity_rps


def cell(change: float, sd: float, units: int, args: argparse.Namespace, rng: np.random.Generator) -> dict[str, float]:
    spec = CapacitySpec(
        target=args.target,
        confidence=args.confidence,
        start_rps=args.start,
        resolution=args.resolution,
        max_probes=args.max_probes,
        repeats=args.repeats,
    )
    sizes = sizes_for("capacity_rps")
    regressed = 0
    ratios = []
    probes_caps = []
    for _ in range(args.reps):
        ref, cand = [], []
        for _ in range(units):
            ref.append(block_capacity(rng, args.c0 * math.exp(rng.normal(0, sd)), args, spec))
            cand.append(block_capacity(rng, args.c0 * (1 - change) * math.exp(rng.normal(0, sd)), args, spec))
        probes_caps.extend(ref)
        if min(ref + cand) <= 0:
            continue  # a search that found nothing: not judged (counted as not regressed)
        c = compare_rounds(
            "capacity_rps", ref, cand, higher_is_better=True, sizes=sizes, alpha=args.alpha, unit="server pairs"
        )
        regressed += c.verdict == "regressed"
        ratios.append(c.estimate)
    k = regressed
    ci = stats.binomtest(k, args.reps).proportion_ci(0.95, method="exact")
    per_search_sd = float(np.std(np.log(probes_caps), ddof=1))
    return {
        "rate": k / args.reps,
        "low": ci.low,
        "high": ci.high,
        "median_ratio": float(np.median(ratios)) if ratios else math.nan,
        "search_sd": per_search_sd,
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--units", default="3,4,6,8", help="server pairs per comparison (comma list)")
    p.add_argument("--sd", default="0.02,0.05,0.08", help="block SD of log capacity (comma list)")
    p.add_argument("--changes", default="0,0.02,0.10", help="capacity losses (0 = A/A; comma list)")
    p.add_argument("--alpha", type=float, default=0.01)
    p.add_argument("--n", type=int, default=40, help="requests per probe")
    p.add_argument("--target", type=float, default=0.9)
    p.add_argument("--confidence", type=float, default=0.8)
    p.add_argument("--width", type=float, default=0.15, help="attainment curve width in log rate")
    p.add_argument("--rho", type=float, default=0.1, help="intra-probe correlation of requests")
    p.add_argument("--c0", type=float, default=3.0)
    p.add_argument("--start", type=float, default=1.0)
    p.add_argument("--resolution", type=float, default=1.1)
    p.add_argument("--max-probes", type=int, default=8)
    p.add_argument("--repeats", type=int, default=0)
    p.add_argument("--seed", type=int, default=58)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(
        f"# Capacity comparison by simulation\n\n`nice -n 19 python experiments/capacity/simulate_capacity.py {' '.join(argv)}`\n"
    )
    print(
        f"settings: {args.reps} replicates a cell; alpha {args.alpha} one-sided; sizes {sizes_for('capacity_rps').describe()}; "
        f"probe {args.n} requests, target {args.target}, confidence {args.confidence}, curve width {args.width}, "
        f"rho {args.rho}; search start {args.start} req/s, resolution {args.resolution}, max {args.max_probes} "
        f"probes, repeats {args.repeats}; C0 {args.c0} req/s; seed {args.seed}\n"
    )
    print(
        "| block SD | server pairs | capacity loss | P(regressed) [95% CI] | median ratio | SD of one search's log capacity |"
    )
    print("|---|---|---|---|---|---|")
    t0 = time.time()
    for sd in [float(x) for x in args.sd.split(",")]:
        for units in [int(x) for x in args.units.split(",")]:
            for change in [float(x) for x in args.changes.split(",")]:
                r = cell(change, sd, units, args, rng)
                print(
                    f"| {sd:.3g} | {units} | {100 * change:.0f}% | {100 * r['rate']:.1f}% "
                    f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}] | {r['median_ratio']:.3f} | {r['search_sd']:.3f} |",
                    flush=True,
                )
    print(f"\n({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
