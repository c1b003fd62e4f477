"""The table of the issue-57 CPU sessions (placements_cpu.sh): per session the verdicts, the set effect the
swap cancelled, the wall time against the printed budget; then the parallel placement's interference
against the interleaved one, per arm, from the A/A sessions' blocks.

Interference: a block's output tok/s when both arms' blocks run at once (disjoint-parallel) over its tok/s
when they take turns (disjoint), per arm and per set (median over the judged blocks of all sessions of that
mode, 95% bootstrap interval of the ratio of medians, scipy.stats.bootstrap). It cancels in the comparison
where it is the same for both arms: the asymmetry (candidate's ratio over reference's) is the number that
matters, and 1 is what the A/A should show.

    python experiments/compare/placements_report.py > experiments/compare/placements_cpu.out.md
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from statistics import median

import numpy as np
from scipy import stats

DATA = Path(__file__).resolve().parents[1] / "data" / "compare" / "placements"
METRICS = ("output_throughput", "median_tpot_ms", "median_ttft_ms")


def read(folder: Path) -> list[dict]:
    path = folder / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def budget_and_wall(folder: Path) -> tuple[str, str, str]:
    text = (folder / "command.txt").read_text() if (folder / "command.txt").exists() else ""
    budget = re.search(r"BUDGET=(\S+)", text)
    wall = re.search(r"wall (\d+) s", text)
    load = re.search(r"loadavg (\S+ \S+ \S+)", text)
    return (budget.group(1) if budget else "?", wall.group(1) if wall else "?", load.group(1) if load else "?")


def seconds(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(s|m|min|h)?", text)
    if not m:
        return float("nan")
    return float(m.group(1)) * {"s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]


def sessions() -> None:
    print(
        "| session | verdict tok/s (ratio [95% CI]) | TPOT | TTFT | rounds | set effect (core 1 over core 0) | "
        "budget | pytest wall | first unit start to last block | loadavg before |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for folder in sorted(p for p in DATA.iterdir() if p.is_dir()):
        rows = read(folder)
        comps = {r["metric"]: r for r in rows if r.get("record") == "comparison"}
        effect = next((r for r in rows if r.get("record") == "comparison_set_effect"), None)

        def cell(metric: str, comps: dict = comps) -> str:
            c = comps.get(metric)
            if c is None:
                return "-"
            return f"{c['verdict']} x{c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"

        e = (effect or {}).get("set_effect")
        eff = f"x{e['ratio']:.3f} [{e['low']:.3f}, {e['high']:.3f}] ({e['units']} units)" if e else "-"
        budget, wall, load = budget_and_wall(folder)
        rounds = comps.get("output_throughput", {}).get("rounds", "-")
        tput = comps.get("output_throughput", {})
        share, spent = tput.get("budget_s"), tput.get("elapsed_s")
        share_text = f"{budget} ({share:.0f} s)" if isinstance(share, (int, float)) else budget
        spent_text = f"{spent:.0f} s" if isinstance(spent, (int, float)) else "-"
        print(
            f"| {folder.name} | {cell('output_throughput')} | {cell('median_tpot_ms')} | {cell('median_ttft_ms')} | "
            f"{rounds} | {eff} | {share_text} | {spent_text} | {wall} s | {load} |"
        )


def tokps(mode: str, role: str, label: str = "aa") -> dict[str, list[float]]:
    """Judged blocks' tok/s of ``role`` per set, over every ``label`` session of ``mode``."""
    out: dict[str, list[float]] = {}
    for folder in sorted(DATA.glob(f"{label}-{mode}-*")):
        for r in read(folder):
            if r.get("record") == "comparison_block" and r.get("role") == role and r.get("round", -1) >= 0:
                v = (r.get("metrics") or {}).get("output_throughput")
                if isinstance(v, (int, float)) and r.get("devices"):
                    out.setdefault(",".join(r["devices"]), []).append(float(v))
    return out


def ratio_ci(a: list[float], b: list[float]) -> str:
    """median(a) / median(b) with a 95% bootstrap interval (independent resamples of the two)."""
    if len(a) < 3 or len(b) < 3:
        return "-"
    res = stats.bootstrap(
        (np.asarray(a), np.asarray(b)),
        lambda x, y, axis=-1: np.median(x, axis=axis) / np.median(y, axis=axis),
        n_resamples=4000,
        random_state=np.random.default_rng(57),
        method="percentile",
    )
    lo, hi = res.confidence_interval
    return f"x{median(a) / median(b):.3f} [{lo:.3f}, {hi:.3f}]"


def interference() -> None:
    print(
        "| arm | set | blocks interleaved / parallel | median tok/s interleaved | parallel | parallel over interleaved |"
    )
    print("|---|---|---|---|---|---|")
    for role in ("reference", "candidate"):
        inter, par = tokps("disjoint", role), tokps("disjoint-parallel", role)
        for s in sorted(set(inter) | set(par)):
            a, b = par.get(s, []), inter.get(s, [])
            med_b = f"{median(b):.1f}" if b else "-"
            med_a = f"{median(a):.1f}" if a else "-"
            print(f"| {role} | core {s} | {len(b)} / {len(a)} | {med_b} | {med_a} | {ratio_ci(a, b)} |")


def main() -> int:
    print("# Issue 57 on the CPU: disjoint placements, two 1-core llama-servers pinned to core 0 and core 1")
    print()
    print(
        "Each session: `LABEL=… MODE=… N=… BUDGET=150s flock /tmp/llmbench-heavy.lock nice -n 5 bash "
        "experiments/compare/placements_cpu.sh` (SmolLM2-135M Q4_1, chat-1u, `-t 1` on both arms, the "
        "candidate `--top-k 0` in the topk sessions; alpha 0.05 per comparison). The host was shared with up to "
        "five other engineers' jobs (2 cores): the loadavg column is read just before each session."
    )
    print()
    sessions()
    print()
    print("Interference of the parallel placement (A/A sessions' judged blocks, output tok/s):")
    print()
    interference()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
