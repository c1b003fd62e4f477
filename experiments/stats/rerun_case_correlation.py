"""Run-to-run per-case correlation between two real runs of the CPU suite: what a paired gate cancels.

Not a test: a measurement whose numbers go in the notes. Give it two results folders of the same
benches on the same build (each run starts its own llama-server), e.g.::

    flock /tmp/llmbench-heavy.lock pytest benches/test_quality_cpu.py benches/test_decisions_cpu.py -m cpu \\
        -k "test_accept_length or test_bfcl_subset or test_canary_decisions" --results-dir A
    (the same with --results-dir B)
    python experiments/stats/rerun_case_correlation.py A B [--out experiments/stats/rerun_case_correlation.out.md]

Per gated set: the cases both runs have, Pearson ρ of the per-case values (scipy.stats.pearsonr), the SD
between cases (what an unpaired rule must allow for) and the SD of the per-case differences (all a
paired rule sees), and how many cases repeat exactly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "src"))

from pytest_llmbench.evals.decisions.paired import gate_cases
from pytest_llmbench.evals.decisions.results import read_answers
from pytest_llmbench.records.results import iter_records


def case_sets(folder: Path) -> dict[str, dict[str, float]]:
    """{"<config> <set> <metric>": {case id: value}} from one results folder."""
    out: dict[str, dict[str, float]] = {}
    for r in iter_records(folder, "accept_length"):
        out[f"{r['config']} {r['set']} accept_length"] = {
            f"{q['id']}#{q['turn']}": q["accept_length"] for q in r["per_request"] if q.get("accept_length") is not None
        }
    for r in iter_records(folder, "bfcl"):
        out[f"{r['config']} bfcl passed"] = {c["id"]: float(c["passed"]) for c in r["cases"]}
    for path in sorted(folder.glob("*/decisions/canary.answers.jsonl")):
        answers = read_answers(path)
        for metric in ("correct", "log_loss"):
            out[f"{path.parts[-3]} canary {metric}"] = gate_cases(answers, metric)
    return out


def row(name: str, a: dict[str, float], b: dict[str, float]) -> str:
    common = sorted(a.keys() & b.keys())
    x, y = np.array([a[c] for c in common]), np.array([b[c] for c in common])
    same = int(np.sum(np.isclose(x, y, rtol=0, atol=1e-6)))
    rho = float(stats.pearsonr(x, y)[0]) if len(common) > 2 and x.std() > 0 and y.std() > 0 else float("nan")
    rho_s = "undefined (constant)" if np.isnan(rho) else f"{rho:.4f}"
    return (
        f"| {name} | {len(common)} | {rho_s} | {x.std(ddof=1):.4f} | {(y - x).std(ddof=1):.5f} | {same}/{len(common)} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--out", type=Path, default=HERE / "rerun_case_correlation.out.md")
    args = ap.parse_args(argv)
    a, b = case_sets(args.a), case_sets(args.b)
    lines = [
        "# Run-to-run per-case correlation (two real llama.cpp runs of the CPU suite's paired gates)",
        "",
        f"`python experiments/stats/rerun_case_correlation.py {args.a} {args.b}`",
        "",
        "| set | cases | ρ | SD between cases | SD of differences | identical |",
        "|---|---|---|---|---|---|",
    ]
    lines += [row(k, a[k], b[k]) for k in sorted(a.keys() & b.keys())]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
