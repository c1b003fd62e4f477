"""How often the bisect names the right build, a wrong one, or stops at "unknown", when its steps err at
the rates the comparisons were measured to err (issue 39).

The search (``pytest_llmbench.bisect.search``) runs as shipped over N builds whose first slower member is
drawn uniformly; each step's outcome is drawn from the truth of that step (does the candidate hold the
change and the reference not?): a true difference is called ``different`` with probability ``power``,
``unknown`` with ``unclear``, else ``same`` (a miss); no difference is called ``same``, ``unknown`` with
``unclear``, else ``different`` (a false alarm, at rate ``false_alarm``). Each retry of an unknown step
draws again (``miss`` = 1 − power − unknown is the share of true differences called ``same``). Every rate is
an exact 95% Clopper–Pearson interval over the replicates.

Rates measured (docs/COMPARE_STATS.md): server-pair A/A sessions regressed 0 of 20 (CPU) and 0 of 7 (H200):
false alarms of 0–1% per comparison are what the design promises (alpha); real slowdowns of 4–10% were
called regressed in 9 of 10 (CPU, ×0.90) to 10 of 10 (CPU ``--top-k 0``) and 7 of 7 (H200): power 0.9–1.

    python experiments/bisect/simulate_bisect.py --reps 2000 > experiments/bisect/simulate_bisect.out.md
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from datetime import UTC, datetime

from scipy.stats import binomtest

from pytest_llmbench.bisect.search import Step, StepResult, bisect


def simulate(n: int, power: float, false_alarm: float, unclear: float, rng: random.Random) -> tuple[str, int]:
    """One bisect: ('right' | 'wrong' | 'unknown', comparisons)."""
    k = rng.randrange(1, n)

    def compare(step: Step) -> StepResult:
        differs = step.candidate >= k > step.reference
        u = rng.random()
        if u < unclear:
            return StepResult("unknown", 1.0)
        hit = rng.random() < (power / (1 - unclear) if differs else false_alarm / (1 - unclear))
        return StepResult("different" if hit else "same", 1.0)

    found = bisect(n, compare, max_attempts=2)
    if found.culprit is None:
        return "unknown", found.comparisons
    return ("right" if found.culprit == k else "wrong"), found.comparisons


def ci(k: int, n: int) -> str:
    p = binomtest(k, n).proportion_ci(0.95)
    return f"{100 * k / n:.1f}% [{100 * p.low:.1f}, {100 * p.high:.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=39)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print("# The bisect's answers when its steps err (simulation)\n")
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Command: `python experiments/bisect/simulate_bisect.py "
        f"{' '.join(sys.argv[1:])}` ({args.reps} bisects a cell, the first slower build uniform over 1 … N−1, "
        f"one retry of an unknown step)\n"
    )
    print(
        "| N | power | miss | false alarm | unknown per step | right culprit | wrong culprit | unknown / range | "
        "mean comparisons | ≤ ⌈log2 N⌉ + 3 |"
    )
    print("|---:|---:|---:|---:|---:|---|---|---|---:|---|")
    for n in (8, 16, 65):
        bound = math.ceil(math.log2(n)) + 3
        for power, false_alarm, unclear in (
            (1.0, 0.0, 0.0),
            (0.95, 0.01, 0.0),
            (0.9, 0.01, 0.1),
            (0.9, 0.05, 0.1),
            (0.85, 0.01, 0.1),
            (0.7, 0.01, 0.3),
        ):
            counts = {"right": 0, "wrong": 0, "unknown": 0}
            comps, within = 0, 0
            for _ in range(args.reps):
                answer, c = simulate(n, power, false_alarm, unclear, rng)
                counts[answer] += 1
                comps += c
                within += c <= bound
            print(
                f"| {n} | {power:g} | {abs(round(1 - power - unclear, 3)):g} | {false_alarm:g} | {unclear:g} | {ci(counts['right'], args.reps)} | "
                f"{ci(counts['wrong'], args.reps)} | {ci(counts['unknown'], args.reps)} | {comps / args.reps:.2f} | "
                f"{ci(within, args.reps)} |"
            )


if __name__ == "__main__":
    main()
