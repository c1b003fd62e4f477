"""The slow-start sessions (issue 38) as markdown: per session the command, the plan table it printed before
the first full unit, what it then did (units, rounds, wall seconds against the budget), the verdicts, the
arms' start times, and the dry run on its records.

    python experiments/compare/slow_start_report.py experiments/data/compare/slow_start_cpu > experiments/compare/slow_start_cpu.out.md
    python experiments/compare/slow_start_report.py --h200 experiments/data/compare/compare_h200/campaign11/sessions-40 \
        > experiments/compare/slow_start_h200.out.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pytest_llmbench.cli.compare_plan import main as compare_plan


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def session(folder: Path) -> None:
    command = (folder / "command.txt").read_text().splitlines()
    rows = _records(folder / "results.jsonl")
    kinds: dict[str, list[dict]] = {}
    for r in rows:
        kinds.setdefault(str(r.get("record")), []).append(r)
    print(f"## {folder.name}\n")
    print("    " + "\n    ".join(command) + "\n")
    for plan in kinds.get("comparison_unit_plan", []):
        print("The plan table it printed before the first full unit:\n")
        print("    " + "\n    ".join(plan["table"]) + "\n")
        print(
            f"Planned: {plan['units']} units of {plan['unit_rounds']} rounds (pilot {plan['pilot_units']}), "
            f"~{plan['predicted_s']:.0f} s; measured start {plan['start_s']:.1f} s per pair, round "
            f"{plan['round_s']:.2f} s; the scenario's budget {plan['budget_s']:.0f} s of the session's "
            f"{plan['session_budget_s']:.0f} s.\n"
        )
    for p in kinds.get("comparison_plan", []):
        extra = ""
        if "sd_between" in p:
            extra = f"; the pilot's components: offset SD {100 * p['sd_between']:.2f}%, round SD {100 * p['sd_within']:.2f}%"
        print(f"After the pilot: {p['reason']}{extra}.\n")
    print("| metric | verdict | candidate/reference [95% CI] | units | rounds | stop | p |")
    print("|---|---|---|---|---|---|---|")
    for c in kinds.get("comparison", []):
        print(
            f"| {c['metric']} | {c['verdict']} | ×{c['ratio']:.4f} [{c['ci_low']:.4f}, {c['ci_high']:.4f}] | "
            f"{c.get('n')} | {c['rounds']} | {c['stop']} | {c.get('p_value', float('nan')):.3g} |"
        )
    starts = kinds.get("arm_start", [])
    for role in ("reference", "candidate"):
        vals = [s["startup_s"] for s in starts if s["role"] == role]
        if vals:
            print(f"\n{role} starts: {len(vals)}, {min(vals):.1f}–{max(vals):.1f} s", end="")
    retries = kinds.get("arm_start_retry", [])
    print(f"\n\nStarts retried: {len(retries)}.\n")
    print("The dry run on this session's records (`python -m pytest_llmbench compare-plan … --budget 9m`):\n")
    print("```")
    sys.stdout.flush()
    compare_plan([str(folder), "--budget", "9m"])
    sys.stdout.flush()
    print("```\n")


def main() -> int:
    h200 = "--h200" in sys.argv[1:]
    root = Path(next(a for a in sys.argv[1:] if a != "--h200"))
    flag = " --h200" if h200 else ""
    print(f"<!-- Written by: PYTHONPATH=src python experiments/compare/slow_start_report.py{flag} {root} -->")
    if h200:
        print("# A server that starts 60 s late, compared through pytest on one H200 (issue 38)\n")
        print(
            "Each session: `STEP=campaign START_DELAY=60 experiments/compare/gpu_compare.sh` (device session 11, "
            "`compare_gpu_h200.out.md` §11), both arms' llama-server the wrapper of `slow_start_bin.sh` (sleep 60 s, "
            "then the prebuilt llama.cpp 11434 CUDA build), the candidate's with `-ctv f32` in `s60-ctv-f32`; the GPU "
            "suite's `test_serving[gpu-smol-nospec-chat-1u]`, the plugin's defaults and a session budget.\n"
        )
    else:
        print("# A server that starts 20 s late, compared through pytest on 2 cores (issue 38)\n")
        print(
            "Each session: `experiments/compare/slow_start_cpu.sh` (its first lines: the command), both arms' "
            "llama-server a wrapper folder that sleeps S s and then executes the real one "
            "(`slow_start_bin.sh`), the candidate's with `--top-k 0` in the `topk` session; the CPU suite's "
            "`test_serving[smol-nospec-chat-1u]`, a session budget, the CPU's noise as the prior "
            "(`llmbench_compare_noise = offset=2% round=9%`, `compare_cpu.out.md`).\n"
        )
    for folder in sorted(p for p in root.iterdir() if (p / "results.jsonl").exists()):
        session(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
