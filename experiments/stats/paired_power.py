"""False-alarm rate and power of the paired gates against their unpaired rules, at the seeds' sizes.

Not a test: a simulation whose numbers go in the notes. Every verdict comes from the gate's own noise
models (PairedT, McNemar, PairedBootstrap and their fallbacks StdErr / Binomial), not from formulas.

    python experiments/stats/paired_power.py [--sims 4000] [--corr FILE]

``--corr`` defaults to accept_correlation.py's raw output, ``../data/stats/accept_correlation.json`` from
this script's folder; it is not committed (the reruns behind accept_correlation.out.md were read back from
logs), and without it the measured and empirical accept-length rows are left out.

1. Accept length, 12 and 32 prompts. Per-prompt values x = μ_prompt + ε_run, with the SD between
   prompts and the run-to-run correlation ρ measured on real llama.cpp reruns (accept_correlation.py);
   a regression lowers every prompt by 0.3. Also *empirical*: prompts and two distinct reruns drawn from
   the measured reruns themselves, the candidate's values lowered by 0.3.
2. Pass/fail sets, BFCL 205 at the seeds' 83% and GSM8K 1319 at 97%: each case either passes or fails
   every run (stable) or passes with probability ½ each run (unstable; their count sets the run-to-run
   spread of the total: 168/174/176 on one config, SD 4.2, is ≈ 70 unstable cases of 205). A regression breaks
   ``d`` cases that passed in both. McNemar on the cases vs Binomial (Fisher) on the totals.
3. Decisions: questions grouped in cases (CPU canary: 110 questions in 20 cases), correct 0/1, with
   a share of questions whose answer flips between runs; a regression makes ``d`` percent of the right
   answers wrong. PairedBootstrap (cases resampled whole) vs StdErr (Welch) on the accuracies.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize, stats

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))

from pytest_llmbench.gate.noise import Binomial, McNemar, PairedBootstrap, PairedT, StdErr
from pytest_llmbench.gate.types import BaselineEntry, Observation

DEFAULT_OUT = HERE / "paired_power.out.md"
DEFAULT_CORR = HERE.parent / "data" / "stats" / "accept_correlation.json"
DROP = 0.3


def rate(flags: list[bool]) -> str:
    p = float(np.mean(flags))
    return f"{100 * p:.1f}% ± {100 * np.sqrt(p * (1 - p) / len(flags)):.1f}"


def entry(cases: dict[str, float], *, count: bool = False) -> BaselineEntry:
    obs = Observation.of(None, cases=cases)
    value = sum(cases.values()) if count else obs.value
    return BaselineEntry(
        value=value, direction="higher", noise={}, n=len(cases), se=None if count else obs.se, cases=cases
    )


def keyed(x: np.ndarray) -> dict[str, float]:
    return {f"c{i:04d}": float(v) for i, v in enumerate(x)}


def judge_means(base: np.ndarray, new: np.ndarray, alpha: float) -> tuple[bool, bool, bool]:
    """(paired t fails, Welch fails, StdErr k=2 fails) for one baseline/candidate pair of per-prompt values."""
    e, b, c = entry(keyed(base)), keyed(new), None
    paired = PairedT(alpha=alpha).verdict(e, Observation.of(None, cases=b), "higher").status == "REGRESSED"
    c = Observation.of(list(new))
    welch = StdErr(alpha=alpha).verdict(e, c, "higher").status == "REGRESSED"
    k2 = StdErr(k=2).verdict(e, c, "higher").status == "REGRESSED"
    return paired, welch, k2


# --- 1. accept length --------------------------------------------------------------------------------------


def measured(corr_path: Path) -> dict[str, list[dict[str, float]]]:
    if not corr_path.exists():
        return {}
    raw = json.loads(corr_path.read_text())
    return {name: by_label["same seed"] for name, by_label in raw.items() if "same seed" in by_label}


def accept_params(runs: list[dict[str, float]]) -> tuple[float, float]:
    """(SD between prompts, ρ) from reruns: ρ from the mean over pairs of reruns."""
    from itertools import combinations

    rhos, sds = [], []
    for a, b in combinations(runs, 2):
        common = sorted(a.keys() & b.keys())
        x, y = np.array([a[c] for c in common]), np.array([b[c] for c in common])
        rhos.append(np.corrcoef(x, y)[0, 1])
        sds.append(np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2))
    return float(np.mean(sds)), float(np.mean(rhos))


def accept_normal(rng, n: int, sd: float, rho: float, drop: float, alpha: float, sims: int) -> list[tuple[bool, ...]]:
    sd_prompt, sd_run = sd * np.sqrt(rho), sd * np.sqrt(1 - rho)
    out = []
    for _ in range(sims):
        mu = 3.0 + rng.normal(0, sd_prompt, n)
        base = np.round(mu + rng.normal(0, sd_run, n), 4)
        new = np.round(mu - drop + rng.normal(0, sd_run, n), 4)
        out.append(judge_means(base, new, alpha))
    return out


def accept_empirical(
    rng, runs: list[dict[str, float]], n: int, drop: float, alpha: float, sims: int
) -> list[tuple[bool, ...]]:
    ids = sorted(set.intersection(*(set(r) for r in runs)))
    table = np.array([[r[i] for i in ids] for r in runs])  # reruns × prompts
    out = []
    for _ in range(sims):
        pick = rng.choice(len(ids), n, replace=len(ids) < n)
        a, b = rng.choice(len(runs), 2, replace=False)
        out.append(judge_means(table[a, pick], table[b, pick] - drop, alpha))
    return out


# --- 2. pass/fail sets -------------------------------------------------------------------------------------


def pass_fail(rng, n: int, acc: float, unstable: int, broken: int, alpha: float, sims: int) -> list[tuple[bool, bool]]:
    out = []
    for _ in range(sims):
        stable_pass = round(acc * n - unstable / 2)
        kind = np.array([1] * stable_pass + [0] * (n - stable_pass - unstable) + [2] * unstable)
        rng.shuffle(kind)

        def run(kind=kind):
            x = (kind == 1).astype(float)
            x[kind == 2] = rng.random(int(np.sum(kind == 2))) < 0.5
            return x

        base, new = run(), run()
        both = np.flatnonzero(kind == 1)
        new[rng.choice(both, broken, replace=False)] = 0.0
        e = entry(keyed(base), count=True)
        c = keyed(new)
        k = float(new.sum())
        mc = McNemar(alpha=alpha).verdict(e, Observation.of(k, n=n, cases=c), "higher").status == "REGRESSED"
        bi = Binomial(alpha=alpha).verdict(e, Observation.of(k, n=n), "higher").status == "REGRESSED"
        out.append((mc, bi))
    return out


# --- 3. decisions ------------------------------------------------------------------------------------------


def decisions(
    rng, cases: int, per_case: int, acc: float, flip: float, broken: float, alpha: float, sims: int, resamples: int
) -> list[tuple[bool, bool]]:
    """Questions of a case share a difficulty; a share ``flip`` of questions is a coin each run."""
    out = []
    model = PairedBootstrap(alpha=alpha, cluster="::", resamples=resamples)
    for _ in range(sims):
        ease = rng.normal(0, 1.0, cases)  # case effect
        p = 1 / (1 + np.exp(-(np.log(acc / (1 - acc)) + ease[:, None] + rng.normal(0, 1.0, (cases, per_case)))))
        stable = (rng.random((cases, per_case)) < p).astype(float)
        coin = rng.random((cases, per_case)) < flip

        def run(stable=stable, coin=coin):
            x = stable.copy()
            x[coin] = rng.random(int(coin.sum())) < 0.5
            return x

        base, new = run(), run()
        right = np.argwhere(new == 1)
        k = round(broken * len(right))
        if k:
            hit = right[rng.choice(len(right), k, replace=False)]
            new[hit[:, 0], hit[:, 1]] = 0
        kb = {f"case{c:03d}::q{q}": float(base[c, q]) for c in range(cases) for q in range(per_case)}
        kn = {f"case{c:03d}::q{q}": float(new[c, q]) for c in range(cases) for q in range(per_case)}
        e = entry(kb)
        pb = model.verdict(e, Observation.of(None, cases=kn), "higher").status == "REGRESSED"
        we = StdErr(alpha=alpha).verdict(e, Observation.of(list(kn.values())), "higher").status == "REGRESSED"
        out.append((pb, we))
    return out


# --- 4. what each family resolves (exact / noncentral t, no simulation) -----------------------------------


def mde_means(n: int, sd: float, rho: float, alpha: float, power: float = 0.95) -> tuple[float, float]:
    """Smallest drop found with ``power``: paired t (SD of differences sd·√(2(1−ρ))) and Welch (equal SDs)."""

    def solve(sd_effect: float, df: float) -> float:
        crit = stats.t.ppf(1 - alpha, df)
        f = lambda d: (1 - stats.nct.cdf(crit, df, d / sd_effect)) - power  # noqa: E731
        return float(optimize.brentq(f, 1e-9, 12 * sd_effect))

    paired = solve(sd * np.sqrt(2 * (1 - rho)) / np.sqrt(n), n - 1) if rho < 1 else 0.0
    return paired, solve(sd * np.sqrt(2 / n), 2 * n - 2)


def mde_counts(n: int, acc: float, unstable: int, alpha: float, power: float = 0.95) -> tuple[int | None, int | None]:
    """Smallest number of broken cases found with ``power``: McNemar and Fisher, exact over the unstable
    cases' coin flips (each unstable case differs between two runs with probability ½)."""
    stable = round(acc * n - unstable / 2)
    coins = stats.binom.pmf(np.arange(unstable + 1), unstable, 0.5)

    def mcnemar_power(d: int) -> float:
        total = 0.0
        for disc in range(unstable + 1):  # unstable cases that differ between the two runs
            p_disc = stats.binom.pmf(disc, unstable, 0.5)
            worse = np.arange(disc + 1)
            reject = stats.binom.sf(worse + d - 1, disc + d, 0.5) < alpha  # P(X ≥ worse+d) under ½
            total += p_disc * float(np.sum(stats.binom.pmf(worse, disc, 0.5) * reject))
        return total

    def fisher_power(d: int) -> float:
        total = 0.0
        for a in range(unstable + 1):
            for b in range(unstable + 1):
                kb, kn = stable + a, stable - d + b
                p = stats.fisher_exact([[kb, n - kb], [kn, n - kn]], alternative="greater").pvalue
                total += coins[a] * coins[b] * (p < alpha)
        return total

    def first(fn) -> int | None:
        lo, hi = 0, stable
        if fn(hi) < power:
            return None
        while lo < hi:  # power grows with d
            mid = (lo + hi) // 2
            lo, hi = (mid + 1, hi) if fn(mid) < power else (lo, mid)
        return lo

    return first(mcnemar_power), first(fisher_power)


def part_accept(rng, a: float, sims: int, runs: dict) -> list[str]:
    lines = [
        "## 1. Accept length: a drop of 0.3 on every prompt",
        "",
        "Normal rows: per-prompt values with the SD between prompts and ρ given; the measured ρ comes from "
        "accept_correlation.out.md. Empirical rows: prompts and two distinct reruns drawn from the real reruns.",
        "",
        "| model of the data | prompts | SD between prompts | ρ | false alarm paired t | Welch | StdErr k=2 "
        "| power paired t | Welch | StdErr k=2 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    conditions = accept_conditions(runs)
    for label, sd, rho in conditions:
        for n in (12, 32):
            null = accept_normal(rng, n, sd, rho, 0.0, a, sims)
            alt = accept_normal(rng, n, sd, rho, DROP, a, sims)
            lines.append(
                f"| {label} (normal) | {n} | {sd:.3f} | {rho:.3f} | "
                + " | ".join(rate([x[i] for x in null]) for i in range(3))
                + " | "
                + " | ".join(rate([x[i] for x in alt]) for i in range(3))
                + " |"
            )
            print(lines[-1], flush=True)
    for name, r in runs.items():
        for n in (12, 32):
            null = accept_empirical(rng, r, n, 0.0, a, sims)
            alt = accept_empirical(rng, r, n, DROP, a, sims)
            sd, rho = accept_params(r)
            lines.append(
                f"| reruns of {name} resampled (empirical) | {n} | {sd:.3f} | {rho:.3f} | "
                + " | ".join(rate([x[i] for x in null]) for i in range(3))
                + " | "
                + " | ".join(rate([x[i] for x in alt]) for i in range(3))
                + " |"
            )
            print(lines[-1], flush=True)
    return lines


def accept_conditions(runs: dict) -> list[tuple[str, float, float]]:
    conditions = [(f"measured, {name}", *accept_params(r)) for name, r in runs.items()]
    sd_ref = float(np.mean([c[1] for c in conditions])) if conditions else 1.0
    return conditions + [("ρ chosen", sd_ref, rho) for rho in (0.0, 0.5, 0.8, 0.9)]


def part_counts(rng, a: float, sims: int) -> list[str]:
    lines = [
        "## 2. Pass/fail sets: McNemar on the cases vs Binomial (Fisher) on the totals",
        "",
        f"{sims} simulations per row.",
        "",
        "| set | cases | accuracy | unstable cases | SD of a run's total | broken cases | McNemar fails "
        "| Binomial fails |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, n, acc, unstable_list, broken_list in (
        ("BFCL", 205, 0.83, (10, 30, 70), (0, 5, 10, 15, 20)),
        ("GSM8K", 1319, 0.97, (20, 60), (0, 10, 20, 40)),
    ):
        for u in unstable_list:
            for d in broken_list:
                res = pass_fail(rng, n, acc, u, d, a, sims)
                lines.append(
                    f"| {name} | {n} | {acc:.0%} | {u} | {np.sqrt(u) / 2:.1f} | {d} | "
                    f"{rate([x[0] for x in res])} | {rate([x[1] for x in res])} |"
                )
                print(lines[-1], flush=True)
    return lines


def part_decisions(rng, a: float, sims: int) -> list[str]:
    lines = [
        "## 3. Decisions: PairedBootstrap (cases resampled whole) vs Welch on the accuracies",
        "",
        f"{sims} simulations per row, 2000 bootstrap resamples each.",
        "",
        "| set | cases × questions | accuracy | answers that flip run to run | right answers broken "
        "| PairedBootstrap fails | Welch fails |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, cases, per_case, acc, flips, brokens in (
        ("CPU canary", 20, 6, 0.5, (0.05, 0.2), (0.0, 0.05, 0.1, 0.2)),
        ("GPU typed decisions", 250, 8, 0.8, (0.002, 0.02), (0.0, 0.01, 0.02)),
    ):
        for f in flips:
            for d in brokens:
                res = decisions(rng, cases, per_case, acc, f, d, a, sims, 2000)
                lines.append(
                    f"| {name} | {cases}×{per_case} | {acc:.0%} | {f:.1%} | {d:.0%} | "
                    f"{rate([x[0] for x in res])} | {rate([x[1] for x in res])} |"
                )
                print(lines[-1], flush=True)
    return lines


def part_resolution(a: float, runs: dict) -> list[str]:
    lines = [
        f"## 4. What each family resolves at the seeds' sizes (95% power, one-sided α = {a:g})",
        "",
        "Accept length: the smallest uniform drop found with 95% power (noncentral t). Pass/fail: the "
        "smallest number of broken cases (cases that passed in both runs and now fail) found with 95% "
        "power, exact over the unstable cases' coin flips; '—' means not even breaking every stable case "
        "would do. Decisions: see section 3 (simulation).",
        "",
        "| family | size | noise | paired gate resolves | unpaired rule resolves |",
        "|---|---|---|---|---|",
    ]
    conditions = accept_conditions(runs)
    for n in (12, 32):
        for label, sd, rho in conditions:
            if label == "ρ chosen" and rho not in (0.5, 0.9):
                continue
            p, u = mde_means(n, sd, rho, a)
            lines.append(
                f"| accept length (PairedT / Welch) | {n} prompts | {label}: SD between prompts {sd:.2f}, "
                f"ρ = {rho:.3f} | drop ≥ {p:.3f} | drop ≥ {u:.3f} |"
            )
    for name, n, acc, unstable_list in (
        ("BFCL (McNemar / Fisher)", 205, 0.83, (0, 10, 30, 70)),
        ("GSM8K (McNemar / Fisher)", 1319, 0.97, (0, 20, 60)),
    ):
        for u in unstable_list:
            mc, fi = mde_counts(n, acc, u, a)
            show = lambda d, n=n: "—" if d is None else f"{d} cases ({100 * d / n:.1f} pts)"  # noqa: E731
            lines.append(
                f"| {name} | {n} cases at {acc:.0%} | {u} unstable cases (SD of a run's total "
                f"{np.sqrt(u) / 2:.1f}) | {show(mc)} | {show(fi)} |"
            )
    print("\n".join(lines), flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sims",
        type=int,
        default=4000,
        help="per accept-length row (a quarter per pass/fail row, a twentieth per decisions row)",
    )
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--parts", default="1,2,3,4", help="which sections to (re)compute; the rest come from the cache")
    ap.add_argument("--corr", type=Path, default=DEFAULT_CORR)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args()
    a, sims = args.alpha, args.sims
    runs = measured(args.corr)
    cache_path = args.out.with_suffix(".parts.json")
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    for part in args.parts.split(","):
        t0 = time.monotonic()
        rng = np.random.default_rng([args.seed, int(part)])
        lines = {
            "1": lambda rng=rng: part_accept(rng, a, sims, runs),
            "2": lambda rng=rng: part_counts(rng, a, max(500, sims // 4)),
            "3": lambda rng=rng: part_decisions(rng, a, max(200, sims // 20)),
            "4": lambda: part_resolution(a, runs),
        }[part]()
        cache[part] = {
            "lines": lines,
            "command": f"--sims {sims} --alpha {a:g} --parts {part}",
            "seconds": round(time.monotonic() - t0),
        }
        cache_path.write_text(json.dumps(cache, indent=1, ensure_ascii=False) + "\n")
    out = [
        "# Paired vs unpaired gates: false alarms and power (simulation)",
        "",
        "`python experiments/stats/paired_power.py` — every verdict from the gate's own noise models; ± is the "
        f"Monte-Carlo SE. One-sided α = {a:g} for PairedT, McNemar, PairedBootstrap, StdErr(alpha) (Welch) and "
        "Binomial; StdErr(k=2) is the suites' current rule for accept length.",
        "",
    ]
    for part in sorted(cache):
        out += cache[part]["lines"] + [
            "",
            f"_(section {part}: `{cache[part]['command']}`, {cache[part]['seconds']} s)_",
            "",
        ]
    args.out.write_text("\n".join(out))


if __name__ == "__main__":
    main()
