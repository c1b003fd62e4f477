"""Re-judge the recorded H200 lease 5-6 bisect steps by which end each halving resembles (issue 56).

python experiments/bisect/rejudge_leases.py > experiments/bisect/rejudge_leases.out.md
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_llmbench.bisect.search import Z_RETRY, reading_of, resemblance

DATA = Path(__file__).parents[1] / "data" / "bisect"


def main() -> None:
    print("# Lease 5-6 steps re-judged by which end they resemble\n")
    print("z = (x − D̂/2)/√(se² + se_D²/4) on tok/s (SE from each step's 95% interval / 1.96); |z| < 1: retry.\n")
    print("| lease | step | kind | reference → candidate | ratio [95% CI] | recorded | z | new rule |")
    print("|---|---:|---|---|---|---|---:|---|")
    for lease in ("gpu_h200_lease5", "gpu_h200_lease6"):
        steps = [json.loads(x) for x in (DATA / lease / "results.jsonl").read_text().splitlines()]
        steps = [s for s in steps if s.get("record") == "bisect_step"]
        ends = next(reading_of(s) for s in steps if s["kind"] == "ends")
        assert ends is not None
        for s in steps:
            r = reading_of(s)
            z, new = "", s["outcome"] + " (the verdict rule: ends and confirmation keep it)"
            if s["kind"] == "bisect" and r is not None:
                zv = resemblance(r, ends)
                z = f"{zv:+.2f}"
                new = (
                    "unknown → retry with twice the units" if abs(zv) < Z_RETRY else ("different" if zv > 0 else "same")
                )
            ci = f"×{s['ratio']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]"
            print(
                f"| {lease[-1]} | {s['step']} | {s['kind']} | {s['reference']} → {s['candidate']} | {ci} | {s['outcome']} | {z} | {new} |"
            )


if __name__ == "__main__":
    main()
