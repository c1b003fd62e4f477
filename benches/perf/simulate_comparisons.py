"""Error rates and cost of reference-vs-candidate comparisons (issue 12), by simulation at measured noise.

The verdict rules are those of ``pytest_llmbench.compare`` (stats.py, sequential.py), vectorised with
numpy/scipy; in every checked cell the first CHECKED replicates are re-judged look by look by the real code
(``compare_rounds`` / ``compare_paired`` through ``sequential.Tracker``) and the script stops if a verdict,
a stopping look or an adjusted p disagrees. Only the data are simulated, from this repo's measurements:

- tok/s per block (one arm, one round): log-normal around the arm's level with SD ``sigma`` per block, plus
  a session drift (random walk, 0.5% per block) that ABBA ordering cancels to first order. sigma = 2% is
  the seeds' rerun spread (137.5 / 138.7 / 142.3: SD 1.9%); 4% is the pessimistic case (H200 llama.cpp
  reruns, benches/perf/data/gpu_reruns: tok/s CV 3.1–7.9% between sessions, median 4.6%; within one
  session with the server up it can only be lower). Effect: 10% slower.
- median TPOT per prompt: per-prompt paired log ratio SD 7% (5% per request and arm) plus the block's
  shock, shared by every prompt of the block (the same sigma as tok/s: TPOT is the inverse decode rate).
  32 prompts per round. Effect: 10% slower.
- accept length per prompt: SD 0.9 across prompts (the seeds: 12 prompts with SE 0.2–0.3; DFlash2 sets
  of 32), same-prompt correlation rho between arms 0.5 (paired difference SD 0.9) or 0 (SD 1.27:
  sampling at temperature 1 with nothing shared). With greedy decoding at 1 user an unchanged build gives
  the same accept length on every prompt (gpu_reruns: 0.0% spread in 13 sessions): equivalent at once.
  32 prompts per round. Effect: 0.3 lower.
- pass/fail (BFCL, 205 cases, pass rate 0.83): an A/A pair disagrees on a share psi of cases (the seeds'
  reruns 168 / 174 / 176 give psi ≈ 0.17 under sampling; greedy gives ≈ 0).

Targets (issue 12): A/A false alarm ≤ 1% per comparison and ≤ 5% per suite (Holm over comparisons),
≥ 95% power for a 10% tok/s drop and a 0.3 accept-length drop, sequential ≤ 50% of the fixed-N prompts.

Run: ``PYTHONPATH=src python benches/perf/simulate_comparisons.py [--reps 4000] [--seed 0]`` (~2 min, 1 core).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from pytest_llmbench.compare.sequential import FUTILITY_BOUND, SequentialPlan, Tracker
from pytest_llmbench.compare.stats import compare_decisions, compare_pass_fail, compare_paired, compare_rounds
from pytest_llmbench.gate.budget import holm

ALPHA, SUITE_ALPHA, POWER_TARGET = 0.01, 0.05, 0.95
PROMPTS_PER_ROUND = 32
DRIFT = 0.005
CHECKED = 60  # replicates per checked cell re-judged by the real code
CODES = ("inconclusive", "regressed", "equivalent", "improved")


@dataclass(frozen=True)
class Metric:
    """How one comparison's per-pair values are drawn and judged."""

    name: str
    noise: str
    unit: str  # "rounds" or "prompts"
    per_round: int
    kind: str  # "ratio" (values are log ratios) or "difference"
    margin: float
    effect: float  # on the value's own scale: 0.9 (ratio) or -0.3 (difference)
    draw: Callable[[np.random.Generator, int, int, float], np.ndarray]  # (rng, reps, rounds, effect) -> d
    higher_is_better: bool = True
    grouped: bool = False  # judged per round (per-round means of the per-prompt values)

    def bounds(self) -> tuple[float, float]:
        if self.kind == "ratio":
            return np.log1p(-self.margin), np.log1p(self.margin)
        return -self.margin, self.margin

    def null_effect(self) -> float:
        """The effect at the null's boundary: worse by exactly the margin."""
        if self.kind == "ratio":
            return 1 - self.margin if self.higher_is_better else 1 + self.margin
        return -self.margin if self.higher_is_better else self.margin


def block_shocks(rng: np.random.Generator, reps: int, rounds: int, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Per round, the (reference, candidate) block shocks on the log scale: noise plus a random-walk drift
    over blocks run in ABBA order (round r: reference first when r is even)."""
    walk = np.cumsum(rng.normal(0, DRIFT, (reps, 2 * rounds)), axis=1)
    first, second = walk[:, 0::2], walk[:, 1::2]
    ref_first = (np.arange(rounds) % 2 == 0)
    ref = np.where(ref_first, first, second) + rng.normal(0, sigma, (reps, rounds))
    cand = np.where(ref_first, second, first) + rng.normal(0, sigma, (reps, rounds))
    return ref, cand


def toks(sigma: float) -> Callable:
    def draw(rng, reps, rounds, effect):
        ref, cand = block_shocks(rng, reps, rounds, sigma)
        return np.log(effect) + cand - ref
    return draw


def tpot(sigma: float, per_prompt: float = 0.07) -> Callable:
    def draw(rng, reps, rounds, effect):
        ref, cand = block_shocks(rng, reps, rounds, sigma)
        shared = np.repeat(cand - ref, PROMPTS_PER_ROUND, axis=1)  # every prompt of a block shares its shock
        return np.log(effect) + shared + rng.normal(0, per_prompt, (reps, rounds * PROMPTS_PER_ROUND))
    return draw


def accept(sd_diff: float) -> Callable:
    def draw(rng, reps, rounds, effect):
        return effect + rng.normal(0, sd_diff, (reps, rounds * PROMPTS_PER_ROUND))
    return draw


def metrics() -> list[Metric]:
    out = []
    for sigma in (0.02, 0.04):
        out.append(Metric("tok/s", f"block SD {sigma:.0%}", "rounds", 1, "ratio", 0.03, 0.9, toks(sigma)))
    for sigma in (0.02, 0.04):
        for grouped in (False, True):
            out.append(Metric("median TPOT" + (" per round" if grouped else " per prompt"),
                              f"prompt 7%, block {sigma:.0%}", "prompts", PROMPTS_PER_ROUND, "ratio", 0.05, 1.1,
                              tpot(sigma), higher_is_better=False, grouped=grouped))
    out.append(Metric("median TPOT per round, 3% margin", "prompt 7%, block 2%", "prompts", PROMPTS_PER_ROUND,
                      "ratio", 0.03, 1.1, tpot(0.02), higher_is_better=False, grouped=True))
    for rho, sd in ((0.5, 0.9), (0.0, 1.27)):
        out.append(Metric("accept length", f"diff SD {sd} (rho {rho})", "prompts", PROMPTS_PER_ROUND,
                          "difference", 0.1, -0.3, accept(sd)))
    return out


@dataclass
class Judged:
    verdict: np.ndarray  # index into CODES
    rounds: np.ndarray  # the round the verdict was reached (max rounds when inconclusive)
    p_adj: np.ndarray  # look-adjusted p (min over looks until decided), for the suite's Holm


def judge(m: Metric, d: np.ndarray, plan, rounds: int, alpha: float = ALPHA) -> Judged:
    """Sequential (``plan``) or fixed (``plan=None``: one look after ``rounds`` rounds at ``alpha``) t-based
    verdicts: the rule of stats._t_comparison with sequential.Tracker's bookkeeping and the plan's futility."""
    reps = d.shape[0]
    per = m.per_round
    if m.grouped:  # the round is the unit: per-round means of the per-prompt differences
        d, per = d.reshape(reps, -1, per).mean(axis=2), 1
    lo_b, hi_b = m.bounds()
    worse_b = lo_b if m.higher_is_better else hi_b
    cs, cs2 = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
    verdict = np.zeros(reps, int)
    used = np.full(reps, rounds)
    stopped = np.zeros(reps, bool)
    p_adj = np.ones(reps)
    total = plan.alpha if plan else alpha
    looks = range(plan.min_looks, rounds + 1) if plan else [rounds]
    futility = bool(plan and getattr(plan, "futility", False))
    for k in looks:
        a = plan.alpha_at(k) if plan else alpha
        n = k * per
        mean = cs[:, n - 1] / n
        se = np.sqrt(np.maximum(cs2[:, n - 1] - n * mean * mean, 0) / (n - 1) / n)
        q = stats.t.isf(a, n - 1)
        lo, hi = mean - q * se, mean + q * se
        with np.errstate(divide="ignore", invalid="ignore"):
            tstat = (mean - worse_b) / se
        p = stats.t.cdf(tstat, n - 1) if m.higher_is_better else stats.t.sf(tstat, n - 1)
        reg, imp = (hi < lo_b, lo > hi_b) if m.higher_is_better else (lo > hi_b, hi < lo_b)
        v = np.select([reg, (lo > lo_b) & (hi < hi_b), imp], [1, 2, 3], 0)
        open_ = ~stopped
        p_adj = np.where(open_, np.minimum(p_adj, np.minimum(1.0, p * total / a)), p_adj)
        new = open_ & (v > 0)
        used[new], verdict[new] = k, v[new]
        stopped |= new
        if futility and k < rounds:  # SequentialPlan.futile, vectorised
            n_last = max(n * plan.max_looks / k, n + 1)
            half_last = stats.t.isf(plan.alpha_at(plan.max_looks), n_last - 1) * se * np.sqrt(n / n_last)
            spread = stats.t.isf(FUTILITY_BOUND, n - 1) * se
            low, high = mean - spread, mean + spread
            reachable = (low + half_last < lo_b) | (high - half_last > hi_b) | (
                (2 * half_last < hi_b - lo_b) & (low < hi_b - half_last) & (high > lo_b + half_last))
            futile = ~stopped & ~reachable
            used[futile] = k
            stopped |= futile
    return Judged(verdict, used, p_adj)


def check_against_code(m: Metric, d: np.ndarray, plan: SequentialPlan, j: Judged) -> None:
    """Re-judge the first CHECKED replicates look by look with the real code; stop on any disagreement."""
    sign = 1 if m.higher_is_better else -1
    for i in range(min(CHECKED, d.shape[0])):
        tracker = Tracker(plan)
        for k in range(1, plan.max_looks + 1):
            x = d[i, : k * m.per_round]
            ref = np.ones_like(x) if m.kind == "ratio" else np.zeros_like(x)
            cand = np.exp(x) if m.kind == "ratio" else x
            a = plan.alpha_at(k)
            if m.unit == "rounds":
                c = compare_rounds("m", ref, cand, higher_is_better=m.higher_is_better, margin=m.margin, alpha=a)
            else:
                labels = np.repeat(np.arange(k), m.per_round) if m.grouped else None
                c = compare_paired("m", ref, cand, higher_is_better=m.higher_is_better, margin=m.margin, alpha=a,
                                   relative=m.kind == "ratio", rounds=labels)
            tracker.update(k, [c])
            if tracker.done():
                break
        s = tracker.standing["m"]
        code = CODES.index(s.verdict)
        if code != j.verdict[i] or tracker.look != j.rounds[i] or not np.isclose(s.p_value, j.p_adj[i], rtol=1e-6,
                                                                                   atol=1e-12):
            sys.exit(f"MISMATCH {m.name} {m.noise} rep {i}: code {s.verdict}@{tracker.look} p={s.p_value:.3g} vs "
                     f"simulated {CODES[j.verdict[i]]}@{j.rounds[i]} p={j.p_adj[i]:.3g} (sign {sign})")


def rates(j: Judged) -> dict[str, float]:
    return {c: float(np.mean(j.verdict == i)) for i, c in enumerate(CODES)} | {"rounds": float(j.rounds.mean())}


def fixed_n_for(m: Metric, rng, reps: int, effect: float, want: Callable[[Judged], bool], grid) -> int | None:
    """The smallest fixed number of rounds on ``grid`` whose single look meets ``want``."""
    for n in grid:
        if want(judge(m, m.draw(rng, reps, n, effect), None, n)):
            return n
    return None


class AlwaysValid:
    """Bonferroni over an unbounded number of looks: alpha / ((k-1)·k) at look k ≥ 2 sums to alpha for
    any number of looks (an always-valid test; no max to plan for)."""

    min_looks = 2

    def __init__(self, alpha: float, max_looks: int) -> None:
        self.alpha, self.max_looks = alpha, max_looks

    def alpha_at(self, look: int) -> float:
        look = max(look, 2)
        return self.alpha / ((look - 1) * look)


DEFAULT = "O'Brien-Fleming + futility (default)"


def designs(max_rounds: int) -> list[tuple[str, object]]:
    return [(DEFAULT, SequentialPlan(ALPHA, max_rounds)),
            ("O'Brien-Fleming, no futility", SequentialPlan(ALPHA, max_rounds, futility=False)),
            ("Pocock + futility", SequentialPlan(ALPHA, max_rounds, spending="pocock")),
            ("always-valid (α/(k(k−1)))", AlwaysValid(ALPHA, max_rounds))]


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def per_comparison(rng, reps: int, max_rounds: int) -> dict:
    """Part 1: one comparison at a time."""
    print(f"## 1. One comparison: A/A, at the null's boundary, and with the effect ({reps} replicates per cell, "
          f"max {max_rounds} rounds)\n")
    print("Sequential designs add a round (32 prompts for per-prompt metrics) until the metric is decided, "
          f"cannot be decided any more (futility), or max rounds; alpha {ALPHA} per comparison over all looks. "
          "'boundary': the candidate worse by exactly the margin, where 'regressed' is the test's error (must be "
          "≤ 1%). Rounds: mean rounds used. 'TPOT per prompt': a t over prompts; 'per round': over per-round "
          "means of the per-prompt log ratios (compare_paired(..., rounds=...)).\n")
    print("| metric | noise | margin | effect | design | A/A regressed | A/A equivalent | A/A inconclusive | "
          "A/A rounds | boundary regressed | power | rounds at effect |")
    print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    summary = {}
    for m in metrics():
        neutral = 1.0 if m.kind == "ratio" else 0.0
        for label, plan in designs(max_rounds):
            if "per prompt" in m.name and label != DEFAULT:
                continue  # shown once: the t over prompts does not hold its level with block shocks
            aa = judge(m, m.draw(rng, reps, max_rounds, neutral), plan, max_rounds)
            bd = judge(m, m.draw(rng, reps, max_rounds, m.null_effect()), plan, max_rounds)
            d_eff = m.draw(rng, reps, max_rounds, m.effect)
            ef = judge(m, d_eff, plan, max_rounds)
            if label == DEFAULT:
                check_against_code(m, d_eff, plan, ef)
                summary[(m.name, m.noise)] = (rates(aa), rates(ef))
            r_aa, r_ef = rates(aa), rates(ef)
            eff = f"{m.effect - 1:+.0%}" if m.kind == "ratio" else f"{m.effect:+g}"
            marg = f"{m.margin:.0%}" if m.kind == "ratio" else f"{m.margin:g}"
            print(f"| {m.name} | {m.noise} | {marg} | {eff} | {label} | {pct(r_aa['regressed'])} | "
                  f"{pct(r_aa['equivalent'])} | {pct(r_aa['inconclusive'])} | {r_aa['rounds']:.1f} | "
                  f"{pct(np.mean(bd.verdict == 1))} | {pct(r_ef['regressed'])} | {r_ef['rounds']:.1f} |")
    return summary


def cost(rng, reps: int, max_rounds: int, summary: dict) -> None:
    """Part 2: rounds used by the sequential design vs fixed-N designs with the same error rates."""
    print(f"\n## 2. Cost: sequential (O'Brien-Fleming, max {max_rounds}) vs fixed N ({reps} replicates per size)\n")
    print("Fixed N for power: the fewest rounds whose single look at alpha 0.01 has ≥ 95% power at the effect, "
          "knowing the noise (oracle). Planned: the same, sized for the pessimistic noise of the metric, which a "
          "fixed design must assume because tonight's noise is unknown beforehand. Fixed N for equivalence: "
          "the fewest rounds whose single look says 'equivalent' under A/A as often as the sequential design "
          "does. Per-prompt metrics: multiply rounds by 32 prompts.\n")
    print("| metric | noise | seq. power | seq. rounds at effect | fixed N for power (oracle) | planned fixed N "
          "| seq. / oracle | seq. / planned | seq. A/A equivalent | seq. A/A rounds | fixed N for that equivalence "
          "| seq. / that | half A/A, half effect: seq. / planned |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    grid = list(range(2, 41))
    ms = metrics()
    oracle = {}
    for m in ms:
        oracle[(m.name, m.noise)] = fixed_n_for(
            m, rng, reps, m.effect, lambda j: np.mean(j.verdict == 1) >= POWER_TARGET, grid)
    for m in ms:
        r_aa, r_ef = summary[(m.name, m.noise)]
        n_pow = oracle[(m.name, m.noise)]
        n_plan = max((v for (name, _), v in oracle.items() if name == m.name and v), default=None) \
            or n_pow
        neutral = 1.0 if m.kind == "ratio" else 0.0
        target = r_aa["equivalent"]
        n_eq = fixed_n_for(m, rng, reps, neutral, lambda j: np.mean(j.verdict == 2) >= target, grid) \
            if target > 0.01 else None

        def ratio(a: float, b: int | None) -> str:
            return f"{a / b:.0%}" if b else "–"

        print(f"| {m.name} | {m.noise} | {pct(r_ef['regressed'])} | {r_ef['rounds']:.1f} | {n_pow or '> 40'} | "
              f"{n_plan or '> 40'} | {ratio(r_ef['rounds'], n_pow)} | {ratio(r_ef['rounds'], n_plan)} | "
              f"{pct(target)} | {r_aa['rounds']:.1f} | {n_eq or '–'} | {ratio(r_aa['rounds'], n_eq)} | "
              f"{ratio((r_aa['rounds'] + r_ef['rounds']) / 2, n_plan)} |")


def suite(rng, reps: int, max_rounds: int) -> None:
    """Part 3: a suite of 10 comparisons, Holm over the look-adjusted p-values."""
    print(f"\n## 3. A suite of 10 comparisons ({reps} suites per row, O'Brien-Fleming + futility, max {max_rounds})\n")
    print("4 configs × (tok/s, median TPOT per round) + 2 draft configs × accept length, main noise (block SD 2%, "
          "rho 0.5). Each comparison runs its sequential test at 'alpha per comparison'; 'alone': any comparison "
          f"regressed by its own test; 'Holm': any Holm-adjusted look-adjusted p ≤ the family's alpha "
          f"({SUITE_ALPHA}, or 0.02 in the last rows: the timing family's default; gate.budget.holm). 'all at "
          "the boundary' puts every comparison exactly at its margin: the worst case for false alarms. Each "
          "metric judged as if alone; a config's rounds = the most its metrics used.\n")
    print("| alpha per comparison | truth | P(any regressed), alone | P(any regressed), Holm | changed comparison "
          "regressed: alone / Holm | unchanged comparisons: reg / eq / inc / imp | rounds per config |")
    print("|---:|---|---:|---:|---|---|---:|")
    by = {(m.name, m.noise): m for m in metrics()}
    members = [by[("tok/s", "block SD 2%")], by[("median TPOT per round", "prompt 7%, block 2%")]] * 4 \
        + [by[("accept length", "diff SD 0.9 (rho 0.5)")]] * 2
    config_of = [0, 0, 1, 1, 2, 2, 3, 3, 4, 5]
    # the default; the suite's Bonferroni threshold (gate.budget: alpha / m, known before any test runs) at a
    # 5% suite budget; and at the timing family's default 0.02
    for alpha in (ALPHA, SUITE_ALPHA / len(members), 0.02 / len(members)):
        plan = SequentialPlan(alpha, max_rounds)
        for truth in ("A/A", "all at the boundary", "one tok/s −10%"):
            verdicts, padj, used = [], [], []
            for i, m in enumerate(members):
                neutral = 1.0 if m.kind == "ratio" else 0.0
                eff = m.null_effect() if truth.startswith("all") else (
                    m.effect if truth.startswith("one") and i == 0 else neutral)
                j = judge(m, m.draw(rng, reps, max_rounds, eff), plan, max_rounds)
                verdicts.append(j.verdict)
                padj.append(j.p_adj)
                used.append(j.rounds)
            v, p, u = np.array(verdicts).T, np.array(padj).T, np.array(used).T
            family = SUITE_ALPHA if alpha >= SUITE_ALPHA / len(members) else 0.02
            flagged = np.array([holm(row) for row in p]) <= family
            unchanged = slice(1, None) if truth.startswith("one") else slice(None)
            mix = " / ".join(pct(np.mean(v[:, unchanged] == c)) for c in (1, 2, 0, 3))
            per_config = np.stack([u[:, [i for i, c in enumerate(config_of) if c == k]].max(axis=1)
                                   for k in range(max(config_of) + 1)], axis=1)
            changed = (f"{pct(np.mean(v[:, 0] == 1))} / {pct(np.mean(flagged[:, 0]))}" if truth.startswith("one")
                       else "–")
            print(f"| {alpha:g} | {truth} | {pct(np.mean((v[:, unchanged] == 1).any(axis=1)))} | "
                  f"{pct(np.mean(flagged[:, unchanged].any(axis=1)))} | {changed} | {mix} | {per_config.mean():.1f} |")


def pass_fail(rng, reps: int) -> None:
    """Part 4: exact McNemar with a margin (real code, a fixed set of cases)."""
    n, base = 205, 0.83
    print(f"\n## 4. Pass/fail: exact McNemar with a margin on {n} cases ({reps} replicates per cell, real code)\n")
    print("psi: share of cases the arms disagree on (0: greedy decoding of an unchanged build; 0.17: the seeds' "
          "BFCL reruns under sampling). 'boundary': the candidate exactly one margin worse — 'regressed' there is "
          "the test's error and 'equivalent' a wrong all-clear (each must be ≤ 1%); effect: −10 of 205 cases "
          "(−4.9 points).\n")
    print("| margin | psi | truth | regressed | equivalent | inconclusive | improved |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for margin in (0.02, 0.03):
        for psi in (0.0, 0.02, 0.08, 0.17):
            for truth, delta in (("A/A", 0.0), ("boundary", -margin), ("−10 cases", -10 / n)):
                if abs(delta) > psi or (psi == 0 and delta):
                    continue
                lost_share = 0.5 - delta / (2 * psi) if psi else 0.5  # delta = psi·(1 − 2·lost_share)
                out = np.zeros(4)
                for _ in range(reps):
                    ref = rng.random(n) < base
                    disc = rng.random(n) < psi
                    lost = rng.random(n) < lost_share
                    ref = np.where(disc, lost, ref)  # a discordant case: lost = reference passed it
                    cand = np.where(disc, ~lost, ref)
                    c = compare_pass_fail("bfcl", ref, cand, margin=margin, alpha=ALPHA)
                    out[CODES.index(c.verdict)] += 1
                out /= reps
                print(f"| {margin:g} | {psi:g} | {truth} | {pct(out[1])} | {pct(out[2])} | {pct(out[0])} | "
                      f"{pct(out[3])} |")


def decisions(rng, reps: int) -> None:
    """Part 5: the paired bootstrap for per-question decisions (real code)."""
    n, base, margin = 200, 0.8, 0.03
    print(f"\n## 5. Decisions: paired bootstrap on {n} questions, margin {margin:g} ({reps} replicates per cell, "
          "real code)\n")
    print("Per-question correct (0/1), the arms disagreeing on a share psi of questions. 'boundary': the "
          "candidate exactly one margin worse.\n")
    print("| psi | truth | regressed | equivalent | inconclusive | improved |")
    print("|---:|---|---:|---:|---:|---:|")
    for psi in (0.05, 0.15):
        for truth, delta in (("A/A", 0.0), ("boundary", -margin)):
            lost_share = 0.5 - delta / (2 * psi)
            out = np.zeros(4)
            for i in range(reps):
                ref = rng.random(n) < base
                disc = rng.random(n) < psi
                lost = rng.random(n) < lost_share
                ref = np.where(disc, lost, ref)
                cand = np.where(disc, ~lost, ref)
                c = compare_decisions("correct", ref.astype(float), cand.astype(float), higher_is_better=True,
                                      margin=margin, alpha=ALPHA, seed=i)
                out[CODES.index(c.verdict)] += 1
            out /= reps
            print(f"| {psi:g} | {truth} | {pct(out[1])} | {pct(out[2])} | {pct(out[0])} | {pct(out[3])} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000, help="replicates per cell")
    ap.add_argument("--suite-reps", type=int, default=2000)
    ap.add_argument("--pass-fail-reps", type=int, default=1000)
    ap.add_argument("--decision-reps", type=int, default=150)
    ap.add_argument("--max-rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    print(f"# Reference vs candidate: simulated error rates and cost (seed {args.seed})\n")
    summary = per_comparison(rng, args.reps, args.max_rounds)
    cost(rng, args.reps // 4, args.max_rounds, summary)
    suite(rng, args.suite_reps, args.max_rounds)
    pass_fail(rng, args.pass_fail_reps)
    decisions(rng, args.decision_reps)
    print(f"\n({time.time() - t0:.0f} s; the O'Brien-Fleming rows' first {CHECKED} replicates per metric re-judged "
          "by compare_rounds / compare_paired through sequential.Tracker: all agree)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
