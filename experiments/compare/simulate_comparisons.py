"""Error rates, power and cost of reference-vs-candidate comparisons (issue 20), by simulation at measured noise.

The design is the plugin's (compare/power.py): warm-up rounds not judged, a pilot of ``pilot`` rounds whose
per-round SD plans the rounds for 95% power at ``detect`` (``power.units_for``), capped by the budget, then
one test on all rounds with the pilot's SD and degrees of freedom (Stein's two-stage t,
``stats.compare_rounds(spread=...)``). The verdicts are vectorised with numpy/scipy; the first CHECKED
replicates of every cell are judged again by the real code and the script stops on any disagreement.

Per-round log ratios (candidate/reference tok/s of one ABBA round) are drawn three ways:
- ``normal``: N(log(1 - change), sd²);
- ``t4``: a t distribution with 4 degrees of freedom scaled to the same SD (heavy tails);
- ``gpu``: the 100 per-round values of a real A/A session on one H200 (chat-1u, 2 prompts per block,
  experiments/data/compare/compare_h200/pytest_blocks.jsonl), centred and resampled, plus log(1 - change).

SDs: CPU 2 cores chat-1u 9% at 1–4 prompts per block (experiments/compare/compare_noise_cpu.out.md), H200 4.4% (the
100-round A/A session; a 10-round pilot measured 2.1%, 8-round pilots 4.7–5.4%).

§1–4 treat a round as the unit (one pair of servers, no offset between them). §5 adds an offset per server
start (``simulate_instances``) and compares one pair per session with a fresh pair per unit of 2 or 4 rounds
(the plugin's default since the CPU A/A that read ×1.050: compare/power.py), at the measured cost of a round
and of a restart (``--*-round-s``, ``--*-restart-s``). §6 is the design as it ships, the unit a fresh pair of
2 rounds, at the SD per unit and the seconds per unit that the pytest campaigns measured (``--*-unit-sd``,
``--*-unit-s``), for the default budget and the longer ones a 2-core runner would need.

Run: the command in the first line of simulate_comparisons.out.md (~1 min, 1 core).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.power import units_for
from pytest_llmbench.compare.stats import Spread, compare_rounds

ROOT = Path(__file__).resolve().parents[2]
GPU_BLOCKS = ROOT / "experiments" / "data" / "compare" / "compare_h200" / "pytest_blocks.jsonl"
TPUT = Sizes("ratio", 0.01, 0.03)
ALPHA, POWER = 0.01, 0.95
CHECKED = 40


def gpu_residuals() -> np.ndarray:
    by: dict[int, dict[str, float]] = {}
    for line in GPU_BLOCKS.read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "comparison_block" and r.get("session") == "gpu-aa-0" and r["round"] >= 0:
            by.setdefault(r["round"], {})[r["role"]] = r["metrics"]["output_throughput"]
    d = np.array([math.log(v["candidate"] / v["reference"]) for _, v in sorted(by.items()) if len(v) == 2])
    return d - d.mean()


def draw(
    rng: np.random.Generator, model: str, sd: float, change: float, shape: tuple[int, int], pool: np.ndarray | None
) -> np.ndarray:
    mu = math.log1p(-change)
    if model == "normal":
        return mu + sd * rng.standard_normal(shape)
    if model == "t4":
        return mu + sd * rng.standard_t(4, shape) / math.sqrt(2.0)  # var of t4 is 2
    assert pool is not None
    return mu + rng.choice(pool, size=shape) * (sd / pool.std(ddof=1))


def real_regressed(log_ratios: np.ndarray, pilot_sd: float, df: int, alpha: float) -> bool:
    """The plugin's own verdict (Stein with the pilot's spread) on one replicate's units."""
    c = compare_rounds(
        "output_throughput",
        np.ones(log_ratios.size),
        np.exp(log_ratios),
        higher_is_better=True,
        sizes=TPUT,
        alpha=alpha,
        spread=Spread(pilot_sd, df),
    )
    return c.verdict == "regressed"


def stein_n(s0: np.ndarray, df: int, alpha: float, limit: int) -> np.ndarray:
    reach = stats.t.isf(alpha, df) + stats.t.isf(1 - POWER, df)
    gap = math.log(0.99) - math.log(0.97)
    return np.clip(np.maximum(df + 1, np.ceil((reach * s0 / gap) ** 2)), df + 1, limit).astype(int)


def simulate(
    model: str,
    sd: float,
    change: float,
    *,
    pilot: int,
    limit: int,
    reps: int,
    seed: int,
    pool: np.ndarray | None,
    alpha: float = ALPHA,
) -> dict[str, float]:
    """Rates of 'regressed' and 'equivalent' with the pilot's spread (Stein, the plugin's rule) and with
    the final spread (an internal pilot reused without care), and the rounds run."""
    rng = np.random.default_rng(seed)
    d = draw(rng, model, sd, change, (reps, limit), pool)
    s0 = d[:, :pilot].std(axis=1, ddof=1)
    n = stein_n(s0, pilot - 1, alpha, limit)
    mask = np.arange(limit)[None, :] < n[:, None]
    mean = (d * mask).sum(axis=1) / n
    var_final = ((d - mean[:, None]) ** 2 * mask).sum(axis=1) / (n - 1)
    worse, lo_d, hi_d = math.log(0.99), math.log(0.97), math.log(1.03)
    out = {"rounds": float(n.mean()), "rounds_p90": float(np.percentile(n, 90)), "capped": float(np.mean(n >= limit))}
    for name, se, df in (
        ("stein", s0 / np.sqrt(n), np.full(reps, pilot - 1)),
        ("internal", np.sqrt(var_final / n), n - 1),
    ):
        t_a = stats.t.isf(alpha, df)
        high, low = mean + t_a * se, mean - t_a * se
        out[f"{name}_regressed"] = float(np.mean(high < worse))
        out[f"{name}_equivalent"] = float(np.mean((low > lo_d) & (high < hi_d) & ~(high < worse)))
    for i in range(min(CHECKED, reps)):  # the real code on the same rounds
        assert real_regressed(d[i, : n[i]], float(s0[i]), pilot - 1, alpha) == (
            mean[i] + stats.t.isf(alpha, pilot - 1) * s0[i] / math.sqrt(n[i]) < worse
        ), i
        assert n[i] == min(
            limit, units_for(Spread(float(s0[i]), pilot - 1), sizes=TPUT, alpha=alpha, higher_is_better=True)
        ), i
    return out


def simulate_instances(
    sd_w: float,
    sd_b: float,
    change: float,
    *,
    unit_rounds: int,
    restart: bool,
    pilot_units: int,
    limit_units: int,
    reps: int,
    seed: int,
    alpha: float = ALPHA,
) -> dict[str, float]:
    """Two starts of one build differ by an offset ``b ~ N(0, sd_b²)`` that lasts as long as the servers do.
    ``restart``: every unit of ``unit_rounds`` rounds runs on a fresh pair (its own b); else one pair serves
    every round (one b per session) and the unit is the round. Stein over units either way."""
    rng = np.random.default_rng(seed)
    mu = math.log1p(-change)
    if restart:
        b = sd_b * rng.standard_normal((reps, limit_units))
    else:
        b = np.repeat(sd_b * rng.standard_normal((reps, 1)), limit_units, axis=1)
    d = mu + b + sd_w * rng.standard_normal((reps, limit_units)) / math.sqrt(unit_rounds)
    s0 = d[:, :pilot_units].std(axis=1, ddof=1)
    n = stein_n(s0, pilot_units - 1, alpha, limit_units)
    mask = np.arange(limit_units)[None, :] < n[:, None]
    mean = (d * mask).sum(axis=1) / n
    high = mean + stats.t.isf(alpha, pilot_units - 1) * s0 / np.sqrt(n)
    for i in range(min(CHECKED, reps)):
        assert real_regressed(d[i, : n[i]], float(s0[i]), pilot_units - 1, alpha) == (high[i] < math.log(0.99)), i
    return {
        "regressed": float(np.mean(high < math.log(0.99))),
        "units": float(n.mean()),
        "capped": float(np.mean(n >= limit_units)),
    }


def rate(p: float, reps: int) -> str:
    k = round(p * reps)
    ci = stats.binomtest(k, reps).proportion_ci(0.95, method="exact")
    return f"{100 * p:.2f}% [{100 * ci.low:.2f}, {100 * ci.high:.2f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu-sd", type=float, default=0.09, help="per-round SD on the CPU (compare_noise_cpu.out.md)")
    ap.add_argument("--cpu-round-s", type=float, default=3.4, help="seconds per ABBA round on the CPU")
    ap.add_argument("--cpu-restart-s", type=float, default=2.5, help="seconds to restart both arms on the CPU")
    ap.add_argument("--gpu-round-s", type=float, default=1.5, help="seconds per ABBA round on the H200")
    ap.add_argument("--gpu-restart-s", type=float, default=1.7, help="seconds to restart both arms on the H200")
    ap.add_argument("--gpu-unit-sd", type=float, default=0.025, help="SD per unit (a pair, 2 rounds) on the H200")
    ap.add_argument("--gpu-unit-s", type=float, default=5.3, help="seconds per unit on the H200, restart included")
    ap.add_argument("--cpu-unit-sd", type=float, default=0.063, help="SD per unit on the CPU")
    ap.add_argument("--cpu-unit-s", type=float, default=15.5, help="seconds per unit on the CPU, restart included")
    args = ap.parse_args()
    t0 = time.monotonic()
    pool = gpu_residuals()
    reps = args.reps
    print(
        f"<!-- Written by: PYTHONPATH=src python experiments/compare/simulate_comparisons.py --reps {reps} "
        f"--seed {args.seed} --cpu-sd {args.cpu_sd} --cpu-round-s {args.cpu_round_s} --cpu-restart-s "
        f"{args.cpu_restart_s} --gpu-round-s {args.gpu_round_s} --gpu-restart-s {args.gpu_restart_s} "
        f"--gpu-unit-sd {args.gpu_unit_sd} --gpu-unit-s {args.gpu_unit_s} --cpu-unit-sd {args.cpu_unit_sd} "
        f"--cpu-unit-s {args.cpu_unit_s} -->"
    )
    print("# Comparisons by simulation: Stein's two-stage t at the measured noise (issue 20)\n")
    print(
        f"Sizes: ignore 1%, detect 3% (tok/s); alpha {ALPHA} per comparison; power target 95%; {reps} "
        f"replicates per cell; rates with exact 95% binomial intervals. GPU pool: {pool.size} per-round "
        f"values of a real H200 A/A session (SD {100 * pool.std(ddof=1):.2f}%, kurtosis "
        f"{stats.kurtosis(pool):.2f}).\n"
    )

    print("## 1. False alarms: a change of exactly ignore (1% slower), and none (A/A)\n")
    print(
        "'regressed' at a 1% slowdown may happen with probability ≤ alpha = 1%. Stein (the plugin: the pilot's SD "
        "and df in the final test) against an internal pilot reused without care (the final SD, df N-1).\n"
    )
    print("| noise | SD | pilot | change | mean rounds | Stein regressed | internal pilot regressed |")
    print("|---|---|---|---|---|---|---|")
    for model, sd in (("normal", args.cpu_sd), ("normal", 0.044), ("t4", 0.044), ("gpu", 0.044)):
        for pilot in (8, 12):
            for change in (0.01, 0.0):
                r = simulate(model, sd, change, pilot=pilot, limit=2000, reps=reps, seed=args.seed, pool=pool)
                print(
                    f"| {model} | {100 * sd:.1f}% | {pilot} | {100 * change:.0f}% | {r['rounds']:.0f} | "
                    f"{rate(r['stein_regressed'], reps)} | {rate(r['internal_regressed'], reps)} |",
                    flush=True,
                )

    print("\n## 2. Power curve with the defaults (pilot 12, budget-free)\n")
    print("| noise | SD | slowdown | regressed (Stein) | equivalent | mean rounds (p90) |")
    print("|---|---|---|---|---|---|")
    for model, sd in (("normal", args.cpu_sd), ("gpu", 0.021), ("gpu", 0.044)):
        for change in (0.0, 0.01, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.07, 0.10):
            r = simulate(model, sd, change, pilot=12, limit=2000, reps=reps // 4, seed=args.seed + 1, pool=pool)
            print(
                f"| {model} | {100 * sd:.1f}% | {100 * change:.1f}% | {rate(r['stein_regressed'], reps // 4)} | "
                f"{100 * r['stein_equivalent']:.1f}% | {r['rounds']:.0f} ({r['rounds_p90']:.0f}) |",
                flush=True,
            )

    print("\n## 3. Pilot size: rounds to 95% power at 3% (mean over pilots; normal noise)\n")
    print("| SD | pilot 6 | pilot 8 | pilot 12 | pilot 16 | pilot 24 | known SD (z) |")
    print("|---|---|---|---|---|---|---|")
    for sd in (args.cpu_sd, 0.021, 0.044):
        cells = []
        for pilot in (6, 8, 12, 16, 24):
            r = simulate("normal", sd, 0.03, pilot=pilot, limit=5000, reps=reps // 4, seed=args.seed + 2, pool=pool)
            cells.append(f"{r['rounds']:.0f} ({100 * r['stein_regressed']:.1f}%)")
        z = (stats.norm.isf(ALPHA) + stats.norm.isf(1 - POWER)) ** 2 * sd**2 / (math.log(0.99) - math.log(0.97)) ** 2
        print(f"| {100 * sd:.1f}% | " + " | ".join(cells) + f" | {z:.0f} |", flush=True)

    print("\n## 4. Within a budget: the rounds a 300-s budget allows, and power at 3% then\n")
    print("| where | s per round | SD | rounds in 300 s | regressed at 3% | at 5% | sessions underpowered |")
    print("|---|---|---|---|---|---|---|")
    for where, per, model, sd in (
        ("CPU chat-1u, 2 prompts/block", 3.4, "normal", args.cpu_sd),
        ("H200 chat-1u, 2 prompts/block", 1.5, "gpu", 0.044),
    ):
        limit = int((300 - 2 * per) // per)  # one warm-up round first
        r3 = simulate(model, sd, 0.03, pilot=12, limit=limit, reps=reps // 4, seed=args.seed + 3, pool=pool)
        r5 = simulate(model, sd, 0.05, pilot=12, limit=limit, reps=reps // 4, seed=args.seed + 4, pool=pool)
        print(
            f"| {where} | {per} | {100 * sd:.1f}% | {limit} | {100 * r3['stein_regressed']:.1f}% | "
            f"{100 * r5['stein_regressed']:.1f}% | {100 * r3['capped']:.0f}% |"
        )
    print("\n## 5. Two starts of one build: one pair of servers per session, or a fresh pair per unit\n")
    print(
        "Each start of a server keeps an offset b ~ N(0, sd_b²) while it runs (an A/A on 2 cores read ×1.050 "
        "TPOT at ±1.6% in 1 of 20 sessions; across the 20 sessions the spread of the A/A estimates exceeded "
        "their standard errors by 1.4% (TPOT) and 2.3% (tok/s) in quadrature: experiments/compare/compare_cpu.out.md). "
        "One pair per session (the issue-20 design before restarts) cannot see b: every A/A with |b| beyond "
        "ignore drifts towards 'regressed' as the rounds grow. A fresh pair per unit of 2 rounds (the default "
        "`llmbench_compare_restart_rounds = 2`) makes b noise of the unit: exact at any sd_b. Cost: rounds and "
        f"restarts (s per round and per restart of both arms: CPU {args.cpu_round_s} and {args.cpu_restart_s}, "
        f"H200 {args.gpu_round_s} and {args.gpu_restart_s}).\n"
    )
    print(
        "| where | SD per round | sd_b | design | A/A regressed | at 1% (ignore) regressed | at 3% regressed "
        "| mean rounds at 3% | mean s at 3% |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for where, sd_w, per, restart_s in (
        ("CPU", args.cpu_sd, args.cpu_round_s, args.cpu_restart_s),
        ("H200", 0.044, args.gpu_round_s, args.gpu_restart_s),
    ):
        for sd_b in (0.0, 0.005, 0.01, 0.02):
            for name, unit, restart in (
                ("one pair, rounds", 1, False),
                ("fresh pair per 2 rounds", 2, True),
                ("fresh pair per 4 rounds", 4, True),
            ):
                pilot = 12
                limit = 4000 // unit
                cells = [
                    simulate_instances(
                        sd_w,
                        sd_b,
                        ch,
                        unit_rounds=unit,
                        restart=restart,
                        pilot_units=pilot,
                        limit_units=limit,
                        reps=reps,
                        seed=args.seed + 5,
                    )
                    for ch in (0.0, 0.01, 0.03)
                ]
                rounds = cells[2]["units"] * unit
                secs = rounds * per + (cells[2]["units"] * restart_s if restart else 0.0)
                print(
                    f"| {where} | {100 * sd_w:.1f}% | {100 * sd_b:.1f}% | {name} | {rate(cells[0]['regressed'], reps)} | "
                    f"{rate(cells[1]['regressed'], reps)} | {100 * cells[2]['regressed']:.1f}% | {rounds:.0f} | {secs:.0f} |",
                    flush=True,
                )
    print("\n## 6. The design as it ships: units of 2 rounds at the SD per unit the pytest campaigns measured\n")
    print(
        "The pilot (12 units) and the rounds are units of 2 ABBA rounds on a fresh pair of servers; the budget "
        "(warm-up and pilot included, one unit's time for the warm-up) caps the units. SD per unit and seconds "
        f"per unit: H200 {100 * args.gpu_unit_sd:.1f}% and {args.gpu_unit_s} s (the pilots of the H200 sessions "
        f"with pairs as the unit, compare_gpu_h200.out.md §5), CPU {100 * args.cpu_unit_sd:.1f}% and "
        f"{args.cpu_unit_s} s (the median pilot of the 30 CPU sessions with pairs, compare_cpu.out.md). "
        "'18 of 20' is the binomial chance that ≥ 18 of 20 sessions say regressed at that power.\n"
    )
    print(
        "| where | SD per unit | budget | units | A/A regressed | 1% | 3% | 5% | 7% | 10% | 18 of 20 at 5% | underpowered |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for where, model, sd, unit_s, budgets in (
        ("H200", "normal", args.gpu_unit_sd, args.gpu_unit_s, (300,)),
        ("CPU", "normal", args.cpu_unit_sd, args.cpu_unit_s, (150, 300, 600, 900, 1200)),
        ("CPU", "t4", args.cpu_unit_sd, args.cpu_unit_s, (600,)),
    ):
        for budget in budgets:
            limit = int(budget // unit_s) - 1
            pilot = min(12, limit)  # a budget shorter than the pilot cuts the pilot too
            cells = {
                ch: simulate(model, sd, ch, pilot=pilot, limit=limit, reps=reps // 4, seed=args.seed + 6, pool=pool)
                for ch in (0.0, 0.01, 0.03, 0.05, 0.07, 0.10)
            }
            p5 = cells[0.05]["stein_regressed"]
            print(
                f"| {where} ({model}) | {100 * sd:.1f}% | {budget} s | {limit} | "
                + " | ".join(f"{100 * cells[ch]['stein_regressed']:.1f}%" for ch in cells)
                + f" | {100 * stats.binom.sf(17, 20, p5):.0f}% | {100 * cells[0.03]['capped']:.0f}% |",
                flush=True,
            )
    print(
        f"\n(ran in {time.monotonic() - t0:.0f} s; the real code re-judged the first {CHECKED} replicates of "
        f"every cell and agreed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
