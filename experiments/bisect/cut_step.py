"""What the rounds of a comparison cut short (machine lost, no verdict record) say, by the comparison's own test.

A bisect step whose machine was lost leaves its ``comparison_block`` lines and the pilot's plan
(``comparison_plan``: the spread each deciding metric measured) but no ``comparison`` line. The design has no
look before the last (compare/power.py: Stein's two-stage t), and a lost machine does not look at the data, so
the whole units recorded are a fixed-size sample: ``compare_rounds`` on them, with the pilot's spread, is the
test the step would have run at that size. It is printed for the record, never fed back to the bisect
(``--resume`` runs the step again). Round metrics only: the blocks keep their summaries, not the requests a
per-unit TPOT quantile needs.

    python experiments/bisect/cut_step.py experiments/data/bisect/gpu_h200_lease5/steps/06-bisect-b11368-vs-b11378

Several ``--metric``s split a slowdown: per token (``mean_itl_ms``) or per request (``mean_ttft_ms``), each
judged in the gate's direction for its name (a metric the plan did not decide has no pilot: final SD alone).

    python experiments/bisect/cut_step.py experiments/data/bisect/gpu_h200_lease5/steps/05-bisect-b11368-vs-b11382 \
        --metric output_throughput --metric mean_itl_ms --metric mean_ttft_ms
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

from scipy import stats

from pytest_llmbench.compare.margins import sizes_for
from pytest_llmbench.compare.stats import Spread, compare_rounds
from pytest_llmbench.gate.metric import default_direction
from pytest_llmbench.jsonl import iter_jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", type=Path, help="a step's results folder (or its results.jsonl)")
    parser.add_argument(
        "--metric",
        action="append",
        help="a round metric (repeat for several; default output_throughput); its direction is the gate's",
    )
    parser.add_argument("--alpha", type=float, default=0.01, help="the step's per-comparison alpha (its log says it)")
    args = parser.parse_args()
    path = args.step / "results.jsonl" if args.step.is_dir() else args.step
    for metric in args.metric or ["output_throughput"]:
        judge(path, metric, args.alpha)


def judge(path: Path, metric: str, alpha: float) -> None:
    """The step's test on ``metric`` over the whole units recorded (with the pilot's spread where it planned one)."""
    values: dict[int, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    spread, unit_rounds = None, 1
    for _, r in iter_jsonl(path):
        if r.get("record") == "comparison_plan":
            unit_rounds = int(r.get("unit_rounds") or 1)
            need = [n for n in r.get("needs") or [] if n.get("metric") == metric]
            spread = Spread(float(need[0]["sd"]), int(need[0]["df"])) if need else None
        if r.get("record") == "comparison_block" and not r.get("warmup") and r.get("unit") is not None:
            value = r["metrics"].get(metric)
            if isinstance(value, (int, float)) and value > 0:
                values[int(r["unit"])][int(r["round"])][r["role"]] = float(value)
    whole = {u: rounds for u, rounds in values.items() if sum(len(a) == 2 for a in rounds.values()) == unit_rounds}
    ref = [stats.gmean([a["reference"] for a in rounds.values()]) for _, rounds in sorted(whole.items())]
    cand = [stats.gmean([a["candidate"] for a in rounds.values()]) for _, rounds in sorted(whole.items())]
    partial = len(values) - len(whole)
    print(
        f"{path} {metric}: {len(whole)} whole units of {unit_rounds} rounds ({partial} unit(s) cut mid-way, left out)"
    )
    higher = default_direction(metric) == "higher"
    for label, s in (("with the pilot's spread (the step's test)", spread), ("final SD alone", None)):
        if label.startswith("with") and s is None:
            continue
        c = compare_rounds(
            metric,
            ref,
            cand,
            higher_is_better=higher,
            sizes=sizes_for(metric),
            alpha=alpha,
            spread=s,
            unit="server pairs" if unit_rounds > 1 else "rounds",
        )
        print(
            f"  {label}: ×{c.estimate:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] {c.verdict} "
            f"(p {c.p_value:.3g} against ignore {100 * c.ignore:g}% at alpha {c.alpha:g}; {c.method})"
        )
    print(f"  geometric means: reference {stats.gmean(ref):.4g}, candidate {stats.gmean(cand):.4g} {metric}")
    if spread is not None:
        print(
            f"  pilot: SD {100 * spread.sd:.2g}% per unit, df {spread.df}; recorded units' SD "
            f"{100 * float(stats.tstd([math.log(b / a) for a, b in zip(ref, cand, strict=True)])):.2g}%"
        )


if __name__ == "__main__":
    main()
