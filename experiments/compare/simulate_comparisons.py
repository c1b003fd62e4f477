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

from pytest_llmbench.compare.interleave import round_order
from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.power import units_for
from pytest_llmbench.compare.stats import MIN_DF, Spread, compare_rounds

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


def outliers(rng: np.random.Generator, share: float, shape: tuple[int, int]) -> np.ndarray:
    """A unit hit with probability ``share``: one arm slowed by a factor 1.2–1.7, so the log ratio moves by
    ±log(1.2..1.7) (symmetric: either arm can be the slowed one)."""
    hit = rng.random(shape) < share
    size = np.log1p(rng.uniform(0.2, 0.7, shape)) * rng.choice((-1.0, 1.0), shape)
    out: np.ndarray = hit * size
    return out


def drifting(rng: np.random.Generator, sd: float, shape: tuple[int, int], wander_sd: float) -> np.ndarray:
    """Per-unit log ratios of units of 2 rounds whose blocks share a drifting host speed, played in the
    plugin's order, plus (``wander_sd`` > 0) a slow AR(1) wander of the ratio itself (φ 0.7)."""
    reps, units = shape
    blocks = units * 4
    k = np.arange(blocks)
    host = np.cumsum(0.005 * rng.standard_normal((reps, blocks)), axis=1)
    host += 0.03 * np.sin(2 * np.pi * k / 40 + rng.uniform(0, 2 * np.pi, (reps, 1)))
    roles = np.array([role == "candidate" for r in range(2 * units) for role in round_order(r)])
    values = host + sd * rng.standard_normal((reps, blocks))  # unit ratio SD from block noise: sd
    per_unit = values.reshape(reps, units, 4)
    cand = roles.reshape(units, 4)
    d = (per_unit * cand).sum(axis=2) / 2 - (per_unit * ~cand).sum(axis=2) / 2
    phi = 0.7
    w = np.empty((reps, units))
    w[:, 0] = wander_sd * rng.standard_normal(reps)
    for u in range(1, units):
        w[:, u] = phi * w[:, u - 1] + wander_sd * math.sqrt(1 - phi**2) * rng.standard_normal(reps)
    out: np.ndarray = d + w
    return out


def draw(
    rng: np.random.Generator, model: str, sd: float, change: float, shape: tuple[int, int], pool: np.ndarray | None
) -> np.ndarray:
    mu = math.log1p(-change)
    if model == "normal":
        return mu + sd * rng.standard_normal(shape)
    if model in ("t3", "t4"):
        k = int(model[1])
        return mu + sd * rng.standard_t(k, shape) / math.sqrt(k / (k - 2))
    if model.startswith("cont"):
        return mu + sd * rng.standard_normal(shape) + outliers(rng, int(model[4:]) / 100, shape)
    if model in ("drift", "wander"):
        return mu + drifting(rng, sd, shape, 0.005 if model == "wander" else 0.0)
    assert pool is not None
    return mu + rng.choice(pool, size=shape) * (sd / pool.std(ddof=1))


def real_verdict(log_ratios: np.ndarray, pilot_sd: float, df: int, alpha: float) -> str:
    """The plugin's own verdict on one replicate's units (the session's path: compare_rounds with the
    pilot's spread)."""
    c = compare_rounds(
        "output_throughput",
        np.ones(log_ratios.size),
        np.exp(log_ratios),
        higher_is_better=True,
        sizes=TPUT,
        alpha=alpha,
        spread=Spread(pilot_sd, df),
    )
    return c.verdict


def stein_n(s0: np.ndarray, df: int, alpha: float, limit: int) -> np.ndarray:
    reach = stats.t.isf(alpha, df) + stats.t.isf(1 - POWER, df)
    gap = math.log(0.99) - math.log(0.97)
    return np.clip(np.maximum(df + 1, np.ceil((reach * s0 / gap) ** 2)), df + 1, limit).astype(int)


def verdicts(mean: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(regressed, equivalent) of one-sided bounds mean ± half at alpha, as stats.verdict_of reads them."""
    high, low = mean + half, mean - half
    regressed = high < math.log(0.99)
    improved = low > math.log(1.01)
    equivalent = ~regressed & ~improved & (low > math.log(0.97)) & (high < math.log(1.03))
    return regressed, equivalent


def judge_units(d: np.ndarray, pilot: int, limit: int, alpha: float) -> dict[str, np.ndarray]:
    """Stein's plan on the pilot, then the three final tests on the planned units of every replicate."""
    reps = d.shape[0]
    df = pilot - 1
    s0 = d[:, :pilot].std(axis=1, ddof=1)
    n = stein_n(s0, df, alpha, limit)
    mask = np.arange(limit)[None, :] < n[:, None]
    mean = (d * mask).sum(axis=1) / n
    sf = np.sqrt(((d - mean[:, None]) ** 2 * mask).sum(axis=1) / (n - 1))
    stein = stats.t.isf(alpha, df) * s0 / np.sqrt(n)
    final = stats.t.isf(alpha, n - 1) * sf / np.sqrt(n)
    out = {"n": n, "s0": s0, "mean": mean}
    for name, half in (("plugin", np.maximum(stein, final)), ("stein", stein), ("final", final)):
        out[f"{name}_regressed"], out[f"{name}_equivalent"] = verdicts(mean, half)
    assert reps == n.size
    return out


def check_real(d: np.ndarray, j: dict[str, np.ndarray], pilot: int, limit: int, alpha: float) -> None:
    """The first CHECKED replicates again through the real code: the plan and the verdict."""
    for i in range(min(CHECKED, d.shape[0])):
        n, s0 = int(j["n"][i]), float(j["s0"][i])
        want = "regressed" if j["plugin_regressed"][i] else "equivalent" if j["plugin_equivalent"][i] else None
        got = real_verdict(d[i, :n], s0, pilot - 1, alpha)
        assert (got if got in ("regressed", "equivalent") else None) == want, (i, got, want)
        assert n == min(limit, units_for(Spread(s0, pilot - 1), sizes=TPUT, alpha=alpha, higher_is_better=True)), i


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
    """Rates of 'regressed' and 'equivalent' under the plugin's test (both tests agree), Stein alone and the
    final SD alone, and the units run."""
    rng = np.random.default_rng(seed)
    d = draw(rng, model, sd, change, (reps, limit), pool)
    j = judge_units(d, pilot, limit, alpha)
    n = j["n"]
    out = {"rounds": float(n.mean()), "rounds_p90": float(np.percentile(n, 90)), "capped": float(np.mean(n >= limit))}
    for name in ("plugin", "stein", "final"):
        out[f"{name}_regressed"] = float(np.mean(j[f"{name}_regressed"]))
        out[f"{name}_equivalent"] = float(np.mean(j[f"{name}_equivalent"]))
    check_real(d, j, pilot, limit, alpha)
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
    sf = np.sqrt(((d - mean[:, None]) ** 2 * mask).sum(axis=1) / (n - 1))
    half = np.maximum(stats.t.isf(alpha, pilot_units - 1) * s0, stats.t.isf(alpha, n - 1) * sf) / np.sqrt(n)
    high = mean + half
    for i in range(min(CHECKED, reps)):
        got = real_verdict(d[i, : n[i]], float(s0[i]), pilot_units - 1, alpha) == "regressed"
        assert got == (high[i] < math.log(0.99)), i
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
    ap.add_argument("--reps", type=int, default=20000, help="replicates per cell of §0 (the shipped defaults)")
    ap.add_argument("--other-reps", type=int, default=4000, help="replicates per cell of §1-7")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only-defaults", action="store_true", help="§0 alone")
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
    reps, other = args.reps, args.other_reps
    print(
        f"<!-- Written by: PYTHONPATH=src flock /tmp/llmbench-heavy.lock python "
        f"experiments/compare/simulate_comparisons.py --reps {reps} --other-reps {other} "
        f"--seed {args.seed} --cpu-sd {args.cpu_sd} --cpu-round-s {args.cpu_round_s} --cpu-restart-s "
        f"{args.cpu_restart_s} --gpu-round-s {args.gpu_round_s} --gpu-restart-s {args.gpu_restart_s} "
        f"--gpu-unit-sd {args.gpu_unit_sd} --gpu-unit-s {args.gpu_unit_s} --cpu-unit-sd {args.cpu_unit_sd} "
        f"--cpu-unit-s {args.cpu_unit_s}{' --only-defaults' if args.only_defaults else ''} -->"
    )
    print("# Comparisons by simulation: the final test at the measured noise (issues 20, 37)\n")
    print(
        f"Sizes: ignore 1%, detect 3% (tok/s); alpha {ALPHA} per comparison; power target 95%; rates with exact "
        f"95% binomial intervals (scipy binomtest). 'plugin': the shipped final test (Stein's t on the pilot's SD "
        f"and df and the t on the final SD must both reject); 'Stein alone': issue 20's test; 'final SD alone': "
        f"an internal pilot. GPU pool: {pool.size} per-round values of a real H200 A/A session (SD "
        f"{100 * pool.std(ddof=1):.2f}%, kurtosis {stats.kurtosis(pool):.2f}).\n"
    )
    defaults_table(args, reps, pool)
    if args.only_defaults:
        print(
            f"\n(ran in {time.monotonic() - t0:.0f} s; the real code re-judged the first {CHECKED} replicates of every cell and agreed)"
        )
        return 0

    print("\n## 1. False alarms: a change of exactly ignore (1% slower), and none (A/A), per-round units\n")
    print("'regressed' at a 1% slowdown may happen with probability ≤ alpha = 1%.\n")
    print("| noise | SD | pilot | change | mean rounds | plugin regressed | Stein alone | final SD alone |")
    print("|---|---|---|---|---|---|---|---|")
    for model, sd in (("normal", args.cpu_sd), ("normal", 0.044), ("t4", 0.044), ("gpu", 0.044)):
        for pilot in (8, 12):
            for change in (0.01, 0.0):
                r = simulate(model, sd, change, pilot=pilot, limit=2000, reps=other, seed=args.seed, pool=pool)
                print(
                    f"| {model} | {100 * sd:.1f}% | {pilot} | {100 * change:.0f}% | {r['rounds']:.0f} | "
                    f"{rate(r['plugin_regressed'], other)} | {rate(r['stein_regressed'], other)} | "
                    f"{rate(r['final_regressed'], other)} |",
                    flush=True,
                )

    print("\n## 2. Power curve with the defaults (pilot 12, budget-free)\n")
    print("| noise | SD | slowdown | regressed (plugin) | equivalent | mean rounds (p90) |")
    print("|---|---|---|---|---|---|")
    for model, sd in (("normal", args.cpu_sd), ("gpu", 0.021), ("gpu", 0.044)):
        for change in (0.0, 0.01, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.07, 0.10):
            r = simulate(model, sd, change, pilot=12, limit=2000, reps=other // 4, seed=args.seed + 1, pool=pool)
            print(
                f"| {model} | {100 * sd:.1f}% | {100 * change:.1f}% | {rate(r['plugin_regressed'], other // 4)} | "
                f"{100 * r['plugin_equivalent']:.1f}% | {r['rounds']:.0f} ({r['rounds_p90']:.0f}) |",
                flush=True,
            )

    print("\n## 3. Pilot size: rounds to 95% power at 3% (mean over pilots; normal noise)\n")
    print("| SD | pilot 6 | pilot 8 | pilot 12 | pilot 16 | pilot 24 | known SD (z) |")
    print("|---|---|---|---|---|---|---|")
    for sd in (args.cpu_sd, 0.021, 0.044):
        cells = []
        for pilot in (6, 8, 12, 16, 24):
            r = simulate("normal", sd, 0.03, pilot=pilot, limit=5000, reps=other // 4, seed=args.seed + 2, pool=pool)
            cells.append(f"{r['rounds']:.0f} ({100 * r['plugin_regressed']:.1f}%)")
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
        r3 = simulate(model, sd, 0.03, pilot=12, limit=limit, reps=other // 4, seed=args.seed + 3, pool=pool)
        r5 = simulate(model, sd, 0.05, pilot=12, limit=limit, reps=other // 4, seed=args.seed + 4, pool=pool)
        print(
            f"| {where} | {per} | {100 * sd:.1f}% | {limit} | {100 * r3['plugin_regressed']:.1f}% | "
            f"{100 * r5['plugin_regressed']:.1f}% | {100 * r3['capped']:.0f}% |"
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
                        reps=other,
                        seed=args.seed + 5,
                    )
                    for ch in (0.0, 0.01, 0.03)
                ]
                rounds = cells[2]["units"] * unit
                secs = rounds * per + (cells[2]["units"] * restart_s if restart else 0.0)
                print(
                    f"| {where} | {100 * sd_w:.1f}% | {100 * sd_b:.1f}% | {name} | {rate(cells[0]['regressed'], other)} | "
                    f"{rate(cells[1]['regressed'], other)} | {100 * cells[2]['regressed']:.1f}% | {rounds:.0f} | {secs:.0f} |",
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
                ch: simulate(model, sd, ch, pilot=pilot, limit=limit, reps=other // 4, seed=args.seed + 6, pool=pool)
                for ch in (0.0, 0.01, 0.03, 0.05, 0.07, 0.10)
            }
            p5 = cells[0.05]["plugin_regressed"]
            print(
                f"| {where} ({model}) | {100 * sd:.1f}% | {budget} s | {limit} | "
                + " | ".join(f"{100 * cells[ch]['plugin_regressed']:.1f}%" for ch in cells)
                + f" | {100 * stats.binom.sf(17, 20, p5):.0f}% | {100 * cells[0.03]['capped']:.0f}% |",
                flush=True,
            )
    floor_table(args.seed + 7, other * 5, pool)
    print(
        f"\n(ran in {time.monotonic() - t0:.0f} s; the real code re-judged the first {CHECKED} replicates of "
        f"every cell and agreed)"
    )
    return 0


def defaults_table(args: argparse.Namespace, reps: int, pool: np.ndarray) -> None:
    """§0: the shipped defaults on the H200 (pilot 12 units, SD per unit 2.5%, 300 s at 5.3 s a unit)."""
    limit = int(300 // args.gpu_unit_s) - 1  # one unit's time for the warm-up
    print("## 0. The shipped defaults under five kinds of noise\n")
    print(
        f"Units of 2 rounds on a fresh pair, pilot 12 units, SD per unit {100 * args.gpu_unit_sd:.1f}% (the H200 "
        f"campaigns), at most {limit} units (300 s at {args.gpu_unit_s} s a unit). Targets (issue 37): A/A "
        "regressed ≤ 0.1%; regressed at exactly ignore (1%) ≤ 1.2%; 'equivalent' at a true 3% slowdown ≤ 1%; "
        "power at 3% ≥ 93% under normal noise.\n"
    )
    print(
        "| noise | test | A/A regressed | 1% (ignore) regressed | 3% regressed (power) | 3% called equivalent "
        "| mean units at 3% | underpowered at 3% |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for model in ("normal", "t3", "cont1", "cont2", "cont5", "drift", "wander", "gpu"):
        cells = {
            ch: simulate(model, args.gpu_unit_sd, ch, pilot=12, limit=limit, reps=reps, seed=args.seed + 10, pool=pool)
            for ch in (0.0, 0.01, 0.03)
        }
        for test in ("plugin", "stein", "final"):
            name = {"plugin": "**plugin**", "stein": "Stein alone", "final": "final SD alone"}[test]
            print(
                f"| {model} | {name} | {rate(cells[0.0][f'{test}_regressed'], reps)} | "
                f"{rate(cells[0.01][f'{test}_regressed'], reps)} | {rate(cells[0.03][f'{test}_regressed'], reps)} | "
                f"{rate(cells[0.03][f'{test}_equivalent'], reps)} | {cells[0.03]['rounds']:.1f} | "
                f"{100 * cells[0.03]['capped']:.1f}% |",
                flush=True,
            )


def floor_table(seed: int, reps: int, pool: np.ndarray) -> None:
    """§7: a plain t on n units (no pilot) at a change of exactly ignore, and what an SD on n - 1 df is worth."""
    print("\n## 7. The floor: how few units a verdict may stand on\n")
    print(
        f"A plain t on n units at a change of exactly ignore (SD 2.5%), {reps} replicates a cell; the last "
        "columns: the one-sided t quantile at alpha 1% (how far a decision must reach) and the 90% range of "
        f"true SD / measured SD on n - 1 df (what 'could catch' is worth). The plugin decides nothing below "
        f"{MIN_DF} df.\n"
    )
    print("| units | df | normal | t3 | cont5 | gpu | t(0.99, df) | true SD / measured SD, 90% |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(seed)
    for n in (2, 3, 4, 5, 6, 8, 12):
        cells = []
        for model in ("normal", "t3", "cont5", "gpu"):
            d = draw(rng, model, 0.025, 0.01, (reps, n), pool)
            high = d.mean(axis=1) + stats.t.isf(ALPHA, n - 1) * d.std(axis=1, ddof=1) / math.sqrt(n)
            cells.append(rate(float(np.mean(high < math.log(0.99))), reps))
        df = n - 1
        lo, hi = math.sqrt(df / stats.chi2.isf(0.05, df)), math.sqrt(df / stats.chi2.ppf(0.05, df))
        print(
            f"| {n} | {df} | " + " | ".join(cells) + f" | {stats.t.isf(ALPHA, df):.2f} | ×[{lo:.2f}, {hi:.2f}] |",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
