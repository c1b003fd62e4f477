"""The GPU smoke suite's unchanged reruns, judged twice by the real gate code: with the noise the bench
used when they ran (no ``noise=`` on tok/s and TPOT → a fixed Relative 5% band, no p-value, outside the
error budget) and with a learned one (History(k=3), the recorded runs as its history, fallback Relative
10% while it has fewer than 3) under the default budget (timing α=0.02 over the gates counted up front).

Data: ``experiments/data/stored/gpu_reruns/`` — the verdict records of 3 recording runs (``--update-baselines
=all``) and 10 unchanged reruns of ``benches/gpu/test_llamacpp_gpu.py -m gpu_smoke -n 2`` on one
2×H200 host (each config on its own H200), made with ``experiments/stored/gpu_reruns.sh``.

Run: ``python experiments/stored/rejudge_gpu_reruns.py`` (saved as rejudge_gpu_reruns.out.md).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from pytest_llmbench.gate.judge import judge
from pytest_llmbench.gate.noise import History, Relative
from pytest_llmbench.gate.types import BaselineEntry, Observation

DATA = Path(__file__).resolve().parents[1] / "data" / "stored" / "gpu_reruns"
TIMING = ("output_throughput", "median_tpot_ms")
ALPHA = 0.02


def observed(run: str) -> dict[tuple[str, str, str], tuple[float, str, str]]:
    """(config, test, metric) → (observed, direction, status as judged in that run) of its timing checks."""
    out = {}
    for line in (DATA / f"{run}.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "verdict" and r["metric"] in TIMING:
            out[(r["config"], r["test_key"], r["metric"])] = (r["observed"], r["direction"], r["status"])
    return out


def main() -> None:
    records = [observed(f"record-{i}") for i in (1, 2, 3)]
    reruns = [observed(f"rerun-{i}") for i in range(1, 11)]
    history = defaultdict(list)
    for rec in records:
        for key, (value, _, _) in rec.items():
            history[key].append(value)
    gates = sorted(history)
    threshold = ALPHA / len(gates)
    learned = History(
        k=3, min_runs=3, fallback=Relative(0.10)
    )  # the History this output measured (min_runs 3 before 32268a3)
    rows, as_ran, relearned = [], [], []
    for i, run in enumerate(reruns, 1):
        old = [k for k in gates if k in run and run[k][2] == "REGRESSED"]
        new = []
        for key in (k for k in gates if k in run):  # a test that failed before its checks judged none
            value, direction, _ = run[key]
            hist = tuple(history[key])
            entry = BaselineEntry(value=hist[-1], direction=direction, noise=learned.to_dict(), history=hist)
            v = judge(entry, Observation.of(value), learned, direction, threshold=threshold)
            if v.status == "REGRESSED":
                new.append(key)
        as_ran.append(bool(old))
        relearned.append(bool(new))
        rows.append(f"| {i} | {len(old)} | {len(new)} | {len(gates) - sum(k in run for k in gates)} |")
    print("# GPU smoke reruns re-judged: fixed 5% band vs learned spread under the error budget\n")
    print(
        f"{len(gates)} timing gates (tok/s and median TPOT × 3 scenarios × 2 configs); history = the 3 "
        f"recording runs; per-test level α/m = {ALPHA}/{len(gates)} = {threshold:.4f}.\n"
    )
    print("| rerun | REGRESSED as run (Relative 5%) | REGRESSED with History(k=3) + budget | not judged |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nRuns with at least one false REGRESSED: {sum(as_ran)}/10 as run; {sum(relearned)}/10 re-judged.\n")
    print("Spread of each gate over the 13 runs (min … max, as % of the median):\n")
    for key in gates:
        vals = [history[key][j] for j in range(3)] + [r[key][0] for r in reruns if key in r]
        med = sorted(vals)[len(vals) // 2]
        print(
            f"- {key[0]} {key[1].split('::')[-1]} {key[2]}: {min(vals):.4g} … {max(vals):.4g} "
            f"({100 * (min(vals) - med) / med:+.1f}% … {100 * (max(vals) - med) / med:+.1f}%)"
        )


if __name__ == "__main__":
    main()
