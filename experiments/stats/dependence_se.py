"""Issue 55, finding 7: which serial-dependence-robust SE bounds a drifting arm ratio, and what it costs.

The model: per-unit log ratios with 2% unit noise plus a slowly drifting ratio, AR(1) φ 0.7, stationary SD
0.5% (the audit's ``ar1``). The mean's variance is then 27% above what the units' SD says, yet over ~25
units the drift moves the lag-1 autocorrelation by 0.04 against a sampling SD of 0.2: the lag-1 check
flags it ~1% of the time. Each candidate guard joins the decision rule as one more test that must reject
(an intersection, so it only ever widens), and the planner is asked for more power (``margin``, added to
0.95 as compare/power.py ``units_for`` adds ``compare.stats.DEPENDENCE_LEVEL``) to pay for it.

The rule is re-run here in numpy (vectorized, 20,000 replicates a cell: Stein's t on the pilot of 12 units,
the final-SD t, and the guard; N from the project's ``units_for``) to choose a guard; the chosen one is then
measured through the project's own functions in experiments/stats/audit_comparisons.py. Guards:

- ``none``: Stein's t and the final-SD t only;
- ``NW max``: the textbook fix, SE = max(iid SE, Newey–West Bartlett SE with lags ⌊4(n/100)^(2/9)⌋ and the
  n/(n−1) correction), t with n − 1 df;
- ``NW exact``: a separate t on the Bartlett long-run variance normalised to be unbiased under independence
  (xᵀMWMx / tr(MWM)) with the Satterthwaite df tr(MWM)²/tr((MWM)²) (stats/ttest.py ``bartlett_form``),
  NW lags (shipped: stats/ttest.py ``hac_t``, from ``HAC_MIN_UNITS`` = 12 units, margin 0.03);
- ``NW+1 exact``: the same with one lag more.

    nice -n 19 python experiments/stats/dependence_se.py > experiments/stats/dependence_se.out.md
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.power import reach
from pytest_llmbench.compare.stats import POWER
from pytest_llmbench.stats.ttest import HAC_MIN_UNITS, bartlett_form

TPUT = Sizes("ratio", 0.01, 0.03)
ALPHA, PILOT, SD, MAX_UNITS = 0.01, 12, 0.02, 200
WORSE, EQ_LO, EQ_HI = math.log(0.99), math.log(0.97), -math.log(0.97)
GAP = math.log(0.99) - math.log(0.97)


def draw(rng: np.random.Generator, model: str, change: float, reps: int) -> np.ndarray:
    d = math.log1p(-change) + SD * rng.standard_normal((reps, MAX_UNITS))
    if model == "ar1":
        w = np.empty((reps, MAX_UNITS))
        w[:, 0] = 0.005 * rng.standard_normal(reps)
        z = rng.standard_normal((reps, MAX_UNITS))
        for u in range(1, MAX_UNITS):
            w[:, u] = 0.7 * w[:, u - 1] + 0.005 * math.sqrt(1 - 0.49) * z[:, u]
        d += w
    return d


def planned(sd: np.ndarray, margin: float) -> np.ndarray:
    """compare/power.py ``units_for`` at power 0.95 + ``margin``, vectorized through its cached ``reach``."""
    ratio = np.array([float(f"{x / GAP:.2g}") for x in sd])
    c = np.array([reach(PILOT - 1, ALPHA, min(POWER + margin, 0.999), r) for r in ratio])
    return np.minimum(MAX_UNITS, np.maximum(PILOT, np.ceil((c * sd / GAP) ** 2))).astype(int)


def nw_lags(n: int) -> int:
    return math.floor(4 * (n / 100) ** (2 / 9))


def rates(d: np.ndarray, guard: str, margin: float, from_units: int) -> tuple[float, float, float]:
    sd_p = d[:, :PILOT].std(axis=1, ddof=1)
    units = planned(sd_p, margin)
    reg = np.zeros(d.shape[0], bool)
    eq = np.zeros(d.shape[0], bool)
    for n in np.unique(units):
        idx = np.flatnonzero(units == n)
        x = d[idx, :n]
        mean = x.mean(axis=1)
        own = x.std(axis=1, ddof=1) / math.sqrt(n)
        halves = [stats.t.isf(ALPHA, n - 1) * own]
        if n > PILOT:
            halves.append(stats.t.isf(ALPHA, PILOT - 1) * sd_p[idx] / math.sqrt(n))
        if guard == "NW max":
            lags = max(1, nw_lags(n))
            xc = x - mean[:, None]
            lrv = np.sum(xc * xc, axis=1) / n
            for k in range(1, lags + 1):
                lrv += 2 * (1 - k / (lags + 1)) * np.sum(xc[:, k:] * xc[:, :-k], axis=1) / n
            hac = np.sqrt(np.maximum(lrv, 0) / (n - 1))  # n/(n-1) correction, over n for the mean
            halves.append(stats.t.isf(ALPHA, n - 1) * np.maximum(own, hac))
        elif guard != "none" and n >= from_units:
            lags = max(1, min(n - 2, nw_lags(n) + (1 if guard == "NW+1 exact" else 0)))
            form, df = bartlett_form(int(n), lags)
            lrv = np.einsum("ri,ij,rj->r", x, form, x)
            halves.append(stats.t.isf(ALPHA, df) * np.sqrt(np.maximum(lrv, 0) / n))
        half = np.max(np.vstack(halves), axis=0)
        reg[idx] = mean + half < WORSE
        eq[idx] = (mean - half > EQ_LO) & (mean + half < EQ_HI)
    return float(reg.mean()), float(eq.mean()), float(units.mean())


def ci(p: float, n: int) -> str:
    k = round(p * n)
    low, high = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{100 * p:.2f}% [{100 * low:.2f}, {100 * high:.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20000)
    args = ap.parse_args()
    t0 = time.time()
    print("# A serial-dependence guard for the comparison's t (issue 55, finding 7)\n")
    print(f"    nice -n 19 python experiments/stats/dependence_se.py --reps {args.reps}\n")
    print(
        f"{args.reps} replicates a cell (the same draws for every guard), alpha {ALPHA}, ignore 1% / detect 3%, "
        f"pilot {PILOT} units, SD {100 * SD:g}% per unit; `ar1` adds AR(1) φ 0.7 SD 0.5% to the ratio. "
        "Rates with exact 95% intervals.\n"
    )
    print(
        "| guard | from units | plan margin | normal: regressed at ignore | normal: power at 3% | ar1: regressed at ignore "
        "| ar1: equivalent at 3% | ar1: power at 3% | mean units (normal) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    draws = {
        (m, c): draw(np.random.default_rng(17 + int(1000 * c) + (7 if m == "ar1" else 0)), m, c, args.reps)
        for m in ("normal", "ar1")
        for c in (0.01, 0.03)
    }
    cells = [("none", 0.01, 0), ("NW max", 0.01, 0), ("NW exact", 0.01, 12), ("NW+1 exact", 0.01, 12)]
    cells += [("NW exact", 0.03, 16), ("NW+1 exact", 0.03, 12), ("NW+1 exact", 0.04, 16)]
    cells += [("NW+1 exact", 0.04, 12), ("NW exact", 0.03, HAC_MIN_UNITS)]
    for guard, margin, from_units in cells:
        n_ig, _, units = rates(draws["normal", 0.01], guard, margin, from_units)
        n_pw, _, _ = rates(draws["normal", 0.03], guard, margin, from_units)
        a_ig, _, _ = rates(draws["ar1", 0.01], guard, margin, from_units)
        a_pw, a_eq, _ = rates(draws["ar1", 0.03], guard, margin, from_units)
        print(
            f"| {guard} | {from_units or '—'} | {margin:g} | {ci(n_ig, args.reps)} | {ci(n_pw, args.reps)} | {ci(a_ig, args.reps)} | "
            f"{ci(a_eq, args.reps)} | {ci(a_pw, args.reps)} | {units:.1f} |",
            flush=True,
        )
    print(f"\nRun time {time.time() - t0:.0f} s on the shared 2-core host (other engineers' runs beside it).")


if __name__ == "__main__":
    main()
