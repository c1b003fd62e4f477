"""False-alarm rate and power of each noise model, by simulation, at the seeds' noise and sample sizes.

The rules are the gate's own, vectorised with numpy/scipy for speed; in every cell the first 200
replicates are re-judged by the real gate code (``model.verdict(BaselineEntry, Observation, direction)``)
and the script stops if a single verdict disagrees. Only the data are simulated:

- output tok/s: one number per run, run-to-run noise normal with relative SD sigma (the seeds: "within
  ~4% between reruns"; 137.5 / 138.7 / 142.3 is an SD of 1.9%), so sigma = 2% is the main case and 4%
  the pessimistic one. Effect: a 10% drop.
- accept length: per-prompt values normal around 3.4 with SD 0.9 (clipped to [1, 8]); 32 prompts per
  set (DFlash2 card sets, SE ~0.16) and 12 prompts (SPEED-Bench per length, SE ~0.26, the seeds' 0.2-0.3).
  Effect: a 0.3 drop of the mean.
- BFCL: passes of 205 cases, binomial with p = 0.83 per run (SD 5.4 cases; the seeds' reruns 168 / 174
  / 176 have SD 4.2, a spread of 8). Effect: 10 cases fewer expected passes.

A/A: baseline and new run drawn from the same distribution; false alarm = REGRESSED. Power: the new run
drawn with the effect; power = REGRESSED. Targets: <= 1% false alarms, >= 95% power. Where a row misses,
the smallest sample size on a grid that meets both (checked by the same simulation) is given.

History's rule is the t prediction bound (issue 10), so its rows changed from the fixed k·s of 8fab55e.
The second part is the suite level (``simulate_suite.py``): the CPU suite's 46 gates together, with a
session drift term and same-prompt correlation, before and after the error budget.

Run: ``python experiments/stats/simulate_gates.py [--reps 20000] [--seed 0] [--suite-reps 500]`` (~15 min on
2 shared cores).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_llmbench.gate.noise import Binomial, History, NoiseModel, Relative, Spread, StdErr
from pytest_llmbench.gate.types import BaselineEntry, Observation

FA_TARGET, POWER_TARGET = 0.01, 0.95
TOKS, AL_MEAN, AL_SD, BFCL_P, BFCL_N = 150.0, 3.4, 0.9, 0.83, 205
NOISE = {"name": "sim"}
CHECKED = 200  # replicates per cell re-judged by the real gate code (must agree with the vectorised rule)


@dataclass
class Batch:
    """``reps`` replicates: baseline samples (reps, m) — runs, prompts or history — and the new value(s)."""

    base: np.ndarray
    new: np.ndarray  # (reps,) single values, or (reps, n) per-prompt values
    n: int | None = None  # cases, for counts

    def objects(self, i: int, kind: str) -> tuple[BaselineEntry, Observation]:
        """Replicate ``i`` as the gate sees it."""
        if kind == "samples":
            ob = Observation.of(self.base[i])
            return BaselineEntry(ob.value, "higher", NOISE, n=ob.n, se=ob.se), Observation.of(self.new[i])
        hist = tuple(map(float, self.base[i]))
        if kind == "history":
            return (
                BaselineEntry(hist[-1], "higher", NOISE, n=self.n, history=hist),
                Observation(float(self.new[i]), n=self.n),
            )
        return (
            BaselineEntry(float(np.mean(self.base[i])), "higher", NOISE, n=self.n),
            Observation(float(self.new[i]), n=self.n),
        )


@dataclass
class Case:
    metric: str
    model: NoiseModel
    size_label: str  # what "size" means for this row
    size: int
    effect: str
    draw: Callable[[np.random.Generator, int, bool, int], Batch]
    kind: str  # how a replicate becomes gate objects: "mean" (runs averaged), "history", "samples"
    grid: tuple[int, ...] = ()
    note: str = ""


def toks(sigma: float, history_runs: int | None = None) -> Callable:
    """size = runs averaged per side (Relative), or history runs with one new run (History)."""

    def draw(rng: np.random.Generator, size: int, shifted: bool, reps: int) -> Batch:
        factor = 0.9 if shifted else 1.0
        base = TOKS * (1 + sigma * rng.standard_normal((reps, size)))
        new_runs = 1 if history_runs is not None else size
        new = (TOKS * factor * (1 + sigma * rng.standard_normal((reps, new_runs)))).mean(axis=1)
        return Batch(base, new)

    return draw


def accept(rng: np.random.Generator, size: int, shifted: bool, reps: int) -> Batch:
    base = np.clip(rng.normal(AL_MEAN, AL_SD, (reps, size)), 1, 8)
    new = np.clip(rng.normal(AL_MEAN - (0.3 if shifted else 0.0), AL_SD, (reps, size)), 1, 8)
    return Batch(base, new)


def bfcl(history_runs: int = 1) -> Callable:
    """size = number of cases; the drop is the seeds' 10 of 205 cases, as a proportion."""

    def draw(rng: np.random.Generator, size: int, shifted: bool, reps: int) -> Batch:
        base = rng.binomial(size, BFCL_P, (reps, history_runs)).astype(float)
        new = rng.binomial(size, BFCL_P - (10 / BFCL_N if shifted else 0.0), reps).astype(float)
        return Batch(base, new, n=size)

    return draw


def regressed(model: NoiseModel, b: Batch) -> np.ndarray:
    """The models' rules, vectorised (checked against the gate code on CHECKED replicates per cell)."""
    if isinstance(model, History):
        m = b.base.shape[1]
        sd = b.base.std(axis=1, ddof=1)
        tol = stats.t.ppf(1 - model.alpha, m - 1) * sd * np.sqrt(1 + 1 / m)
        flat = regressed(model.fallback, Batch(b.base[:, -1:], b.new, b.n))  # no spread: the fallback judges
        return np.where(sd > 0, b.base.mean(axis=1) - b.new > tol, flat)
    if isinstance(model, StdErr):
        se_b, se_n = stats.sem(b.base, axis=1), stats.sem(b.new, axis=1)
        n_b, n_n = b.base.shape[1], b.new.shape[1]
        if model.alpha is None:
            k = model.k
        else:
            df = (se_b**2 + se_n**2) ** 2 / (se_b**4 / (n_b - 1) + se_n**4 / (n_n - 1))
            k = stats.t.ppf(1 - model.alpha, df)
        return b.base.mean(axis=1) - b.new.mean(axis=1) > k * np.hypot(se_b, se_n)
    base = b.base[:, -1] if b.n is not None else b.base.mean(axis=1)
    if isinstance(model, Relative):
        return base - b.new > model.frac * np.abs(base)
    if isinstance(model, Spread):
        return base - b.new > model.spread
    if isinstance(model, Binomial):
        crit = {kb: _critical(model, kb, b.n) for kb in np.unique(base).astype(int)}
        return b.new <= np.vectorize(lambda kb: crit[int(kb)])(base)
    raise TypeError(model)


@functools.cache
def _critical(model: Binomial, kb: int, n: int) -> float:
    c = model._critical(kb, n, n, "higher")
    return -1.0 if c is None else float(c)


def rate(case: Case, size: int, shifted: bool, reps: int, rng: np.random.Generator, checked: int = CHECKED) -> float:
    b = case.draw(rng, size, shifted, reps)
    hits = regressed(case.model, b)
    for i in range(min(checked, reps)):  # the vectorised rule must be the gate's rule
        base, obs = b.objects(i, case.kind)
        status = case.model.verdict(base, obs, "higher").status
        if (status == "REGRESSED") != bool(hits[i]):
            raise AssertionError(f"{case.model.describe()}: vectorised rule disagrees with the gate on {base}, {obs}")
    return float(hits.mean())


def meets(fa: float, power: float) -> bool:
    return fa <= FA_TARGET and power >= POWER_TARGET


def size_that_would(case: Case, reps: int, rng: np.random.Generator) -> str:
    for size in case.grid:
        fa = rate(case, size, False, reps, rng, checked=20)
        if fa > 2 * FA_TARGET and size >= 4 * case.size:  # the false-alarm rate no longer falls with size
            break
        pw = rate(case, size, True, reps, rng, checked=20)
        if meets(fa, pw):
            return f"{size} {case.size_label} ({100 * fa:.2f}% / {100 * pw:.1f}%)"
    return f"none up to {case.grid[-1]} {case.size_label}" if case.grid else "—"


def cases() -> list[Case]:
    runs = (2, 3, 4, 5, 6, 8, 10, 12, 16)
    hist_runs = (4, 5, 6, 8, 10, 12, 15, 20, 30, 50)
    prompts = (48, 64, 96, 128, 160, 192, 224, 256, 288, 320, 384, 448, 512)
    bfcl_cases = (410, 615, 820, 1025, 1230, 1435, 1640, 1845, 2050, 2255, 2460, 2870, 3280)
    out = []
    for sigma in (0.02, 0.04):
        s = f"tok/s (run-to-run SD {100 * sigma:g}%)"
        for frac in (0.04, 0.07):
            out.append(Case(s, Relative(frac), "runs/side (mean)", 1, "−10%", toks(sigma), "mean", runs))
        for m in (3, 10):
            out.append(
                Case(
                    s,
                    History(
                        k=3, min_runs=3, fallback=Relative(0.10)
                    ),  # the History these rows measured (before 32268a3)
                    "history runs",
                    m,
                    "−10%",
                    toks(sigma, m),
                    "history",
                    tuple(r for r in hist_runs if r > m),
                    "k=3 is wider than the drop at this SD" if sigma > 0.03 else "",
                )
            )
    for n in (32, 12):
        for model in (StdErr(k=2), StdErr(k=2.33), StdErr(alpha=0.01)):
            out.append(
                Case(
                    "accept length",
                    model,
                    "prompts/side",
                    n,
                    "−0.3",
                    accept,
                    "samples",
                    tuple(p for p in prompts if p > n),
                )
            )
    out.append(
        Case(
            "BFCL passed",
            Spread(8),
            "cases",
            BFCL_N,
            "−10 cases",
            bfcl(),
            "mean",
            (),
            "no size: a fixed spread does not grow with the binomial SD of more cases",
        )
    )
    out.append(Case("BFCL passed", Binomial(alpha=0.01), "cases", BFCL_N, "−10 cases", bfcl(), "mean", bfcl_cases))
    for m in (3, 10):
        out.append(
            Case(
                f"BFCL passed ({m} runs in history)",
                History(k=3, min_runs=3, fallback=Relative(0.10)),  # the History these rows measured (before 32268a3)
                "cases",
                BFCL_N,
                "−10 cases",
                bfcl(m),
                "history",
                bfcl_cases,
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20000, help="replicates per cell (A/A and shifted)")
    ap.add_argument("--search-reps", type=int, default=4000, help="replicates per size while searching")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--suite-reps",
        type=int,
        default=500,
        help="clean runs per row of the suite-level table (simulate_suite.py); 0 skips it",
    )
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    print(f"# Gate error rates by simulation ({args.reps} replicates per cell, seed {args.seed})\n")
    print(
        f"Targets: false alarms ≤ {100 * FA_TARGET:g}% per gate, power ≥ {100 * POWER_TARGET:g}%. "
        f"Monte Carlo SE ≈ {100 * np.sqrt(0.01 * 0.99 / args.reps):.2f} points at 1%, "
        f"{100 * np.sqrt(0.05 * 0.95 / args.reps):.2f} at 95%.\n"
    )
    print(
        "| metric | noise model | size | effect | false alarms (A/A) | power | meets target | "
        "size that would (false alarms / power) |"
    )
    print("|---|---|---|---|---:|---:|:---:|---|")
    for case in cases():
        fa = rate(case, case.size, False, args.reps, rng)
        pw = rate(case, case.size, True, args.reps, rng)
        ok = meets(fa, pw)
        would = "—" if ok else size_that_would(case, args.search_reps, rng)
        if case.note and not ok:
            would = f"{would}; {case.note}" if would != "—" else case.note
        size = f"{case.size} {case.size_label}"
        print(
            f"| {case.metric} | {case.model.describe()} | {size} | {case.effect} | {100 * fa:.2f}% | "
            f"{100 * pw:.1f}% | {'yes' if ok else 'no'} | {would} |",
            flush=True,
        )
    print(
        "\nSize that would: the smallest size on the script's grid meeting both targets with the same noise "
        "model and the same effect (BFCL: the same 10/205 drop as a proportion), found with "
        f"{args.search_reps} replicates per size. 'runs/side (mean)': the mean of that many runs on each "
        "side; 'history runs': accepted runs in the baseline's history, one new run."
    )
    print(f"\n({time.perf_counter() - t0:.0f} s)\n")
    if args.suite_reps:
        import simulate_suite  # beside this script

        simulate_suite.main(["--reps", str(args.suite_reps), "--drift", "0.02", "--rho", "0", "0.5"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
