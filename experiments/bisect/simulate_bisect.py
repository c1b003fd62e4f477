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

Issue 56 adds ``--rules``: the steps are no longer drawn from rates but measured. Each step is the project's
``compare_rounds`` over ``units`` paired log ratios drawn N(−change, σ) with σ = the step SE × √30 (so 30 units
read the stated SE), ``ignore`` 1% / ``detect`` 3%, one-sided ``--alpha`` (default 0.01, the comparison's
shipped alpha, compare/session.py ``DEFAULT_ALPHA``; the first table ran at 0.05); one culprit among 32 builds
after the good one (33 in all). Rules, each the project's ``Search`` as configured:

- ``verdict`` (shipped before issue 56): a halving is ``same`` only when it rules out ``detect``;
- ``resemble``: a halving is judged by which end it resembles, z = (x − D̂/2)/√(se² + se_D²/4), one retry with
  twice the units at |z| < 1, then the sign of z; the ends and the confirmation keep the verdict rule;
- ``resemble, sized``: as ``resemble``, and every step is sized (``Search(size_steps=True)``): an ends step
  that is not ``different`` runs once more with 99% power at ``detect``; a ``yardstick`` step (good vs bad
  again, pooled) when the ends' SE alone would take over half of a halving's z; each halving for |D̂|/2 at
  ``target_z`` SEs of z; the confirmation for 99% power at |D̂| beyond ``ignore`` (D̂ taken one SE low);
  at most ``MAX_SCALE`` × 30 units a step.

    nice -n 10 python experiments/bisect/simulate_bisect.py --rules --reps 2000 \
        > experiments/bisect/simulate_bisect_rules.out.md

At the shipped alpha, with the GPU bisect's cells first (lease 5-6: ends ×0.970, ~2.5-3% per token, step SE
~0.5% from 95% intervals of ±1%):

    nice -n 10 python experiments/bisect/simulate_bisect.py --rules --alpha 0.01 --reps 2000 \
        --cells 2.5:0.5,3:0.5,2.5:0.75,3:0.75 > experiments/bisect/simulate_bisect_rules_a01.out.md
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from datetime import UTC, datetime

import numpy as np
from scipy.stats import binomtest

from pytest_llmbench.bisect.search import Reading, Step, StepResult, bisect
from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.stats import compare_rounds

BASE_UNITS = 30
SIZES = Sizes("ratio", 0.01, 0.03)
ALPHA = 0.01  # compare/session.py DEFAULT_ALPHA; --alpha overrides
CELLS = ((3.0, 0.5), (3.0, 0.75), (3.0, 1.0), (2.5, 0.5), (2.5, 0.75))
OUTCOME = {"regressed": "different", "equivalent": "same", "improved": "same", "inconclusive": "unknown"}
#: (name, Search keywords)
RULES: tuple[tuple[str, dict[str, object]], ...] = (
    ("verdict (old)", {"rule": "verdict", "size_steps": False}),
    ("resemble, 30 units", {"rule": "resemble", "size_steps": False}),
    ("resemble, sized z 2.5", {"rule": "resemble", "size_steps": True, "target_z": 2.5}),
    ("resemble, sized z 3 (shipped)", {"rule": "resemble", "size_steps": True, "target_z": 3.0}),
    ("resemble, sized z 3.5", {"rule": "resemble", "size_steps": True, "target_z": 3.5}),
)


def measured(
    n: int, change: float, se: float, rng: np.random.Generator, kw: dict[str, object], alpha: float = ALPHA
) -> tuple[str, int, float]:
    """One bisect over ``n`` builds whose steps are real ``compare_rounds`` comparisons: (answer, comparisons,
    units spent in multiples of 30)."""
    k = int(rng.integers(1, n))
    sigma = se * math.sqrt(BASE_UNITS)
    spent = [0.0]

    def compare(step: Step) -> StepResult:
        true = change * ((step.candidate >= k) - (step.reference >= k))  # log-scale loss, worse positive
        units = max(round(BASE_UNITS * step.units), 3)
        spent[0] += units / BASE_UNITS
        logs = rng.normal(-true, sigma, units)
        c = compare_rounds(
            "output_throughput", np.ones(units), np.exp(logs), higher_is_better=True, sizes=SIZES, alpha=alpha
        )
        return StepResult(OUTCOME[c.verdict], 1.0, reading=Reading(-math.log(c.estimate), c.se))

    found = bisect(n, compare, max_attempts=2, **kw)  # type: ignore[arg-type]
    if found.culprit is None:
        return "unknown", found.comparisons, spent[0]
    return ("right" if found.culprit == k else "wrong"), found.comparisons, spent[0]


def rules_table(reps: int, seed: int, alpha: float = ALPHA, cells: tuple[tuple[float, float], ...] = CELLS) -> None:
    n = 33
    print("\n## Measured steps: the halving rule, old against new (issue 56)\n")
    print(
        f"{reps} bisects a cell over {n} builds (one culprit among the 32 after the good end, uniform); a step of "
        f"{BASE_UNITS} units reads the stated SE; each retry doubles the units. Units: mean units spent per bisect, "
        f"in multiples of {BASE_UNITS}. One-sided alpha {alpha:g} per comparison.\n"
    )
    print(
        "| change | step SE | rule | right culprit | wrong culprit | unknown / range | mean comparisons | mean units ×30 |"
    )
    print("|---:|---:|---|---|---|---|---:|---:|")
    for pct, se_pct in cells:
        for name, kw in RULES:
            rng = np.random.default_rng([seed, int(pct * 10), int(se_pct * 100)])  # same truths for every rule
            counts = {"right": 0, "wrong": 0, "unknown": 0}
            comps = units = 0.0
            for _ in range(reps):
                answer, c, u = measured(n, -math.log(1 - pct / 100), se_pct / 100, rng, kw, alpha)
                counts[answer] += 1
                comps += c
                units += u
            print(
                f"| {pct:g}% | {se_pct:g}% | {name} | {ci(counts['right'], reps)} | {ci(counts['wrong'], reps)} | "
                f"{ci(counts['unknown'], reps)} | {comps / reps:.2f} | {units / reps:.1f} |",
                flush=True,
            )


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
    ap.add_argument("--rules", action="store_true", help="the measured-step table of issue 56 only")
    ap.add_argument("--alpha", type=float, default=ALPHA, help="one-sided alpha of every comparison (--rules)")
    ap.add_argument(
        "--cells", default=None, help="change%%:SE%% pairs for --rules, comma-separated (e.g. 2.5:0.5,3:0.75)"
    )
    args = ap.parse_args()
    if args.rules:
        print("# The bisect's halving rule on measured steps (simulation)\n")
        print(
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Command: `python experiments/bisect/simulate_bisect.py "
            f"{' '.join(sys.argv[1:])}`, seed {args.seed}; proportions with exact 95% Clopper–Pearson intervals."
        )
        cells = CELLS
        if args.cells:
            cells = tuple((float(a), float(b)) for a, b in (c.split(":") for c in args.cells.split(",")))
        rules_table(args.reps, args.seed, args.alpha, cells)
        return
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
