"""Suite-level false alarms of the CPU suite's gates, before and after the error budget, by simulation.

The gates are the ones benches/*.py configure for the CPU suite (46 at the committed baselines):

- timing, 27: output_throughput / median_ttft_ms / median_tpot_ms × 3 scenarios × 3 configs, each
  ``History(k=3, min_runs=3, fallback=Relative(0.30))`` (benches/conftest.py ``cpu_timing_noise``);
- quality, 12: accept_length per request, ``StdErr(k=2)`` at n = 4 / 8 / 2 (chat-1u / chat-4u /
  prompt2k-1u) for 2 spec configs; accept_length on mt-bench and humaneval (n = 10) for 2 spec configs;
  total_tokens ``StdErr(k=2)`` (n = 8); bfcl_passed ``Spread(3)`` on 50 cases;
- decisions, 7: correct ``Binomial(0.01)`` of 110; log_loss and calibrated_log_loss ``StdErr(k=2)``
  (n = 100, the same answers: correlated 0.9); failed ``Spread(3)``, calibrated_ece ``Spread(0.03)``;
  answers_changed / text_mismatches ``History(k=3, fallback=Spread(3|2))`` (Poisson counts).

Noise, stated rather than measured here (experiments/stored/stored_timing_cpu.out.md has the real reruns): every
timing value carries a session drift shared by all timing gates of a run (SD ``--drift``, the machine's
state: other engineers' jobs on the 2 cores) plus its own noise (SD 2%); the tpot and tok/s of one
scenario share their noise (r = 0.9). Per-request values (accept length) of the same prompt are
correlated across runs (``--rho``): the baseline and the new run ask the same prompts. Quality values
are otherwise unit-normal; counts binomial / Poisson.

Each replicate builds the baselines the way ``--update-baselines`` does (``m`` recorded runs, each with
its own drift) and judges one new clean run with the gate's own code (``judge.judge``, ``budget.holm``)
— nothing is re-implemented. "before": every gate at its own level (``--gate-alpha off``); "after":
the default budget (timing 0.02, quality 0.02, decisions 0.01; Holm per family, per-test Bonferroni
over the gates counted up front). BH (Benjamini–Hochberg at the same alphas) is shown for comparison;
"power" is the share of runs in which one injected regression (timing −20% in one gate; accept length
−1 SD at n = 8; 15% of the passes lost, ≈ −10 of 110, on the Binomial gate) is REGRESSED, and "false with it"
the false flags in that run.

Run: ``python experiments/stats/simulate_suite.py [--reps 2000] [--history 3 10] [--drift 0.02] [--rho 0.5]``
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_llmbench.gate.budget import holm, parse_alpha
from pytest_llmbench.gate.judge import beyond_band, judge
from pytest_llmbench.gate.noise import Binomial, History, NoiseModel, Relative, Spread, StdErr
from pytest_llmbench.gate.types import BaselineEntry, Observation

TIMING = History(k=3.0, min_runs=3, fallback=Relative(0.30))
NOISE = {"name": "sim"}
CASE_NOISE = 0.05  # run noise of a case's latent difficulty: ~3% of a fixed case set flips between reruns


@dataclass
class Gate:
    family: str
    model: NoiseModel
    kind: str  # "timing", "samples", "cases", "poisson", "fixed"
    n: int = 0
    group: int = 0  # gates of one group share noise (r = 0.9)
    direction: str = "higher"
    mean: float = 0.0  # pass rate (cases) or Poisson mean


def suite_gates() -> list[Gate]:
    gates = [Gate("timing", TIMING, "timing", group=g // 3 * 3 + (1 if g % 3 else 0)) for g in range(27)]
    for n in (4, 8, 2, 4, 8, 2, 10, 10, 10, 10, 8):
        gates.append(Gate("quality", StdErr(k=2.0), "samples", n))
    gates.append(Gate("quality", Spread(3), "cases", 50, mean=0.5))
    gates += [
        Gate("decisions", Binomial(alpha=0.01), "cases", 110, mean=0.6),
        Gate("decisions", StdErr(k=2.0), "samples", 100, 99),
        Gate("decisions", StdErr(k=2.0), "samples", 100, 99),
        Gate("decisions", Spread(3), "poisson", direction="lower", mean=1.0),
        Gate("decisions", Spread(0.03), "fixed", direction="lower"),
        Gate("decisions", History(k=3, fallback=Spread(3)), "poisson", direction="lower", mean=1.0),
        Gate("decisions", History(k=3, fallback=Spread(2)), "poisson", direction="lower", mean=0.5),
    ]
    return gates


class Run:
    """One session's values for every gate; ``prompt`` effects are shared across sessions (same prompts)."""

    def __init__(
        self,
        rng: np.random.Generator,
        gates: list[Gate],
        prompt: dict[int, np.ndarray],
        drift: float,
        rho: float,
        shift: dict[int, float] | None = None,
    ) -> None:
        d = rng.normal(0, drift)
        shared = {g: rng.normal() for g in {x.group for x in gates}}
        shift = shift or {}
        self.obs: list[Observation] = []
        for i, g in enumerate(gates):
            s = shift.get(i, 0.0)
            if g.kind == "timing":
                e = 0.9 * shared[g.group] + np.sqrt(1 - 0.9**2) * rng.normal() if g.group else rng.normal()
                self.obs.append(Observation(100.0 * np.exp(d + 0.02 * e) * (1 - s)))
            elif g.kind == "samples":
                own = rng.normal(size=g.n)
                vals = np.sqrt(rho) * prompt[i] + np.sqrt(1 - rho) * own - s
                self.obs.append(Observation.of(vals))
            elif g.kind == "cases":  # a fixed case set: a case passes when its latent difficulty plus
                # this run's noise is under the threshold (exchangeable runs; ~3% of cases flip)
                passed = prompt[i] + CASE_NOISE * rng.normal(size=g.n) < stats.norm.ppf(g.mean)
                passed &= rng.uniform(size=g.n) >= s  # the regression: a share s of passes lost
                self.obs.append(Observation(float(passed.sum()), n=g.n))
            elif g.kind == "poisson":
                self.obs.append(Observation(float(rng.poisson(g.mean))))
            else:
                self.obs.append(Observation(float(np.clip(rng.normal(0.08, 0.008), 0, 1))))


def baselines(runs: list[Run], gates: list[Gate]) -> list[BaselineEntry]:
    out = []
    for i, g in enumerate(gates):
        o = [r.obs[i] for r in runs]
        last = o[-1]
        out.append(
            BaselineEntry(
                last.value,
                g.direction,
                NOISE,
                n=last.n,
                se=last.se,  # type: ignore[arg-type]
                history=tuple(x.value for x in o),
            )
        )
    return out


def judge_run(
    gates: list[Gate], entries: list[BaselineEntry], run: Run, budget: dict[str, float] | None, method: str = "holm"
) -> list[bool]:
    counts = {f: sum(g.family == f and g.model.gives_p for g in gates) for f in ("timing", "quality", "decisions")}
    verdicts = []
    for g, e, o in zip(gates, entries, run.obs, strict=True):
        thr = budget[g.family] / counts[g.family] if budget else None
        verdicts.append(judge(e, o, g.model, e.direction, threshold=thr))
    flags = [v.status == "REGRESSED" for v in verdicts]
    if budget is None:
        return flags
    for fam, alpha in budget.items():
        idx = [i for i, v in enumerate(verdicts) if gates[i].family == fam and v.p_value is not None]
        ps = [verdicts[i].p_value for i in idx]
        qs = holm(ps) if method == "holm" else stats.false_discovery_control(ps).tolist() if ps else []
        for i, q in zip(idx, qs, strict=True):
            if q <= alpha and beyond_band(verdicts[i]):
                flags[i] = True
            elif method != "holm":
                flags[i] = False  # BH decides alone (no per-test Bonferroni floor)
    return flags


def simulate(reps: int, m: int, drift: float, rho: float, seed: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    gates = suite_gates()
    budget = parse_alpha(None)
    fam_of = [g.family for g in gates]
    injected = {"timing": 0, "quality": 28, "decisions": 39}  # gate index that regresses in the power runs
    effect = {0: 0.20, 28: 1.0, 39: 0.15}
    res: dict[str, list] = {k: [] for k in ("off", "holm", "bh")}
    power: dict[str, list] = {k: [] for k in ("off", "holm", "bh")}
    for _ in range(reps):
        prompt = {i: rng.normal(size=g.n) for i, g in enumerate(gates) if g.kind in ("samples", "cases")}
        entries = baselines([Run(rng, gates, prompt, drift, rho) for _ in range(m)], gates)
        clean = Run(rng, gates, prompt, drift, rho)
        fam = rng.choice(list(injected))
        target = injected[fam]
        bad = Run(rng, gates, prompt, drift, rho, shift={target: effect[target]})
        for key, (b, meth) in {"off": (None, "holm"), "holm": (budget, "holm"), "bh": (budget, "bh")}.items():
            f = judge_run(gates, entries, clean, b, meth)
            res[key].append(
                [sum(x for x, y in zip(f, fam_of, strict=True) if y == fa) for fa in ("timing", "quality", "decisions")]
            )
            fb = judge_run(gates, entries, bad, b, meth)
            power[key].append((fam, fb[target], sum(fb) - fb[target]))
    out = {}
    for key in res:
        a = np.array(res[key])
        tot = a.sum(axis=1)
        out[key] = {
            "any": float(np.mean(tot > 0)),
            "mean": float(tot.mean()),
            **{f"any_{f}": float(np.mean(a[:, j] > 0)) for j, f in enumerate(("timing", "quality", "decisions"))},
            **{
                f"power_{f}": float(np.mean([hit for fa, hit, _ in power[key] if fa == f] or [np.nan]))
                for f in injected
            },
            "false_with": float(np.mean([fl for *_, fl in power[key]])),
        }
    return out


def paired_decisions(reps: int, noise: float, seed: int) -> dict[str, float]:
    """The CPU canary's paired gate under the null: 10 cases × 3 questions + 10 × 8; a question is right
    when its latent difficulty plus the run's noise (SD ``noise``) is under the threshold — baseline and
    rerun exchangeable, so the expected gap is 0; gap in 'correct' per decision."""
    from pytest_llmbench.evals.decisions.paired import bootstrap_p_worse, paired_bootstrap

    rng = np.random.default_rng(seed)
    per_case = np.array([3] * 10 + [8] * 10)
    old, p01, p025, flips = [], [], [], []
    thr = stats.norm.ppf(0.6)
    for _ in range(reps):
        u = rng.normal(size=per_case.sum())
        base = u + noise * rng.normal(size=u.size) < thr
        new = u + noise * rng.normal(size=u.size) < thr
        flips.append(np.mean(base != new))
        case = np.repeat(np.arange(per_case.size), per_case)
        diff = np.bincount(case, weights=new.astype(float) - base).astype(float)
        count = per_case.astype(float)
        _, _, high = paired_bootstrap(diff, count, resamples=999, seed=int(rng.integers(1 << 31)))
        p = bootstrap_p_worse(diff, count, "higher", resamples=999, seed=int(rng.integers(1 << 31)))
        old.append(bool(np.isfinite(high) and high < 0))
        p01.append(p is not None and p <= 0.01)
        p025.append(p is not None and p <= 0.025)
    return {
        "old": float(np.mean(old)),
        "p025": float(np.mean(p025)),
        "p01": float(np.mean(p01)),
        "flips": float(np.mean(flips)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--history", type=int, nargs="+", default=[3, 10])
    ap.add_argument("--drift", type=float, nargs="+", default=[0.0, 0.02])
    ap.add_argument("--rho", type=float, nargs="+", default=[0.0, 0.5])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--paired-reps", type=int, default=4000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"## Suite level: the CPU suite's 46 gates, {args.reps} clean runs per row (seed {args.seed})\n")
    print(
        "| history runs | drift SD | same-prompt ρ | control | P(any false REGRESSED) | timing | quality | "
        "decisions | false flags / run | power timing −20% | power accept −1 SD | power Binomial −15% passes | "
        "false flags beside a real one |"
    )
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in args.history:
        for drift in args.drift:
            for rho in args.rho:
                r = simulate(args.reps, m, drift, rho, args.seed)
                for key, label in (
                    ("off", "none (each gate alone)"),
                    ("holm", "Holm (default budget)"),
                    ("bh", "BH (same alphas)"),
                ):
                    x = r[key]
                    print(
                        f"| {m} | {100 * drift:g}% | {rho:g} | {label} | {100 * x['any']:.1f}% | "
                        f"{100 * x['any_timing']:.1f}% | {100 * x['any_quality']:.1f}% | "
                        f"{100 * x['any_decisions']:.1f}% | {x['mean']:.3f} | {100 * x['power_timing']:.0f}% | "
                        f"{100 * x['power_quality']:.0f}% | {100 * x['power_decisions']:.0f}% | "
                        f"{x['false_with']:.3f} |",
                        flush=True,
                    )
    print(
        f"\nMonte Carlo SE ≈ {100 * np.sqrt(0.05 * 0.95 / args.reps):.1f} points at 5%; power columns use "
        f"about a third of the runs each."
    )
    print("\n## The paired decisions gate (CPU canary: 20 cases, 110 questions) under the null\n")
    print(
        "| answers flipped between reruns | old rule: 95% interval below 0 (nominal 2.5%) | p ≤ 0.025 | "
        "p ≤ 0.01 (the decisions α) |"
    )
    print("|---:|---:|---:|---:|")
    for noise in (0.05, 0.2, 0.6):
        r = paired_decisions(args.paired_reps, noise, args.seed)
        print(
            f"| {100 * r['flips']:.1f}% | {100 * r['old']:.2f}% | {100 * r['p025']:.2f}% | {100 * r['p01']:.2f}% |",
            flush=True,
        )
    print(f"\n({args.paired_reps} null replicates per row; {time.perf_counter() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
