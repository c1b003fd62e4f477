"""Issue 58's live capacity A/A sessions, one row each, read from their results folders: the same build and flags
on both arms of the capacity bench (experiments/capacity/bench/, one server pair, ``--llmbench-candidate-args
"--threads 2"`` against the config's own ``-t 2``), so any "regressed" is a false alarm.

    python experiments/capacity/capacity_aa_report.py DIR... > experiments/capacity/capacity_aa.out.md

with DIR the session folders (experiments/data/capacity/capacity_aa_1 to _6; the exact command heads the output).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pytest_llmbench.records.results import iter_records


def row(folder: Path) -> str:
    log = (folder / "session.log").read_text(errors="replace") if (folder / "session.log").is_file() else ""
    budget = re.search(r"--llmbench-compare-budget (\d+)", log) or re.search(
        r"(\d+) s for the session's scenarios", log
    )
    wall = re.search(r"in ([\d.]+)s \(", log)
    comps = list(iter_records(folder, "comparison"))
    blocks = [b for b in iter_records(folder, "comparison_block") if not b.get("warmup")]
    zeros = sum(1 for b in blocks if (b.get("metrics") or {}).get("capacity_rps") == 0)
    if not comps:
        crash = re.search(r"^E\s+(\w+Error: .*)$", log, re.M)
        what = f"no comparison: {crash.group(1)[:90]}" if crash else "no comparison"
        return (
            f"| {folder.name} | {budget.group(1) if budget else '?'} | {wall.group(1) if wall else '?'} | "
            f"{len(blocks) // 2} | {what} | | | {zeros} |"
        )
    c = comps[-1]
    return (
        f"| {folder.name} | {budget.group(1) if budget else '?'} | {wall.group(1) if wall else '?'} | {c['rounds']} | "
        f"{c['verdict']} | x{c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] | {c.get('stop')} | {zeros} |"
    )


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv]
    print("# Capacity A/A sessions on the CPU (issue 58)\n")
    print(f"Command: `python experiments/capacity/capacity_aa_report.py {' '.join(argv)}`\n")
    print(
        "| session | budget s | pytest s | rounds | verdict | capacity ratio [95% CI] | stop | blocks at capacity 0 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    rows = [row(f) for f in folders]
    for r in rows:
        print(r)
    judged = [r for r in rows if "| regressed |" in r or "| equivalent |" in r or "| inconclusive |" in r]
    regressed = sum("| regressed |" in r for r in rows)
    print(f"\n{regressed} of {len(judged)} judged A/A sessions regressed.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
