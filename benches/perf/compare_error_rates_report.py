"""Markdown report of compare_error_rates.py sessions: false alarms, power, cost, and the stored gate."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from scipy import stats  # noqa: E402

from pytest_llmbench.gate.entry import BaselineEntry  # noqa: E402
from pytest_llmbench.gate.metric import Observation  # noqa: E402
from pytest_llmbench.gate.noise import History, Relative  # noqa: E402

METRICS = ("output_throughput", "median_ttft_ms", "median_tpot_ms", "accept_length")
DIRECTION = {"output_throughput": "higher", "median_ttft_ms": "lower", "median_tpot_ms": "lower",
             "accept_length": "higher"}


def _stop(row: dict) -> tuple[int, dict[str, str]]:
    look = next((lk for lk in row["looks"] if lk["stop"]), row["looks"][-1])
    return look["look"], {c["metric"]: c["verdict"] for c in look["comparisons"]}


def _ci(k: int, n: int) -> str:
    if n == 0:
        return "-"
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{k}/{n} = {k / n:.0%} [{ci.low:.0%}, {ci.high:.0%}]"


def _gate(rows: list[dict], history_rows: list[dict], metric: str, model) -> tuple[int, int]:
    hist = [r["merged"]["reference"][metric] for r in history_rows if r["merged"]["reference"].get(metric)]
    if len(hist) < 3:
        return 0, 0
    entry = BaselineEntry(value=sum(hist) / len(hist), direction=DIRECTION[metric], noise=model.to_dict(),
                          history=tuple(hist))
    bad = n = 0
    for r in rows:
        v = r["merged"]["candidate"].get(metric)
        if v is None:
            continue
        n += 1
        bad += model.verdict(entry, Observation.of(v), DIRECTION[metric]).status == "REGRESSED"
    return bad, n


def _fixed_n_tput(group: list[dict], alpha: float = 0.01) -> dict[int, float]:
    """Share of sessions a fixed-N test (all alpha at one look) calls output tok/s regressed, by N rounds:
    the per-round values are in every row, so each N is judged on the same sessions' first N rounds."""
    from pytest_llmbench.compare.margins import margin_for
    from pytest_llmbench.compare.stats import compare_rounds

    _, margin = margin_for("output_throughput")
    most = min(len(r["per_round_tput"]["reference"]) for r in group)
    out = {}
    for k in range(2, most + 1):
        hits = sum(compare_rounds("output_throughput", r["per_round_tput"]["reference"][:k],
                                  r["per_round_tput"]["candidate"][:k], higher_is_better=True, margin=margin,
                                  alpha=alpha).verdict == "regressed" for r in group)
        out[k] = hits / len(group)
    return out


def _replay_tput(group: list[dict], spending: str, alpha: float = 0.01, min_looks: int = 3) -> tuple[float, float]:
    """Output tok/s alone, re-judged look by look from the recorded per-round values with a sequential plan
    (compare.sequential, futility on): the share called regressed and the mean rounds used."""
    from pytest_llmbench.compare.margins import margin_for
    from pytest_llmbench.compare.sequential import SequentialPlan
    from pytest_llmbench.compare.stats import compare_rounds

    _, margin = margin_for("output_throughput")
    most = min(len(r["per_round_tput"]["reference"]) for r in group)
    plan = SequentialPlan(alpha=alpha, max_looks=most, min_looks=min_looks, spending=spending)
    hits, rounds = 0, 0
    for r in group:
        ref, cand = r["per_round_tput"]["reference"], r["per_round_tput"]["candidate"]
        for k in range(min_looks, most + 1):
            c = compare_rounds("output_throughput", ref[:k], cand[:k], higher_is_better=True, margin=margin,
                               alpha=plan.alpha_at(k))
            if plan.stop(k, [c]):
                break
        hits += c.verdict == "regressed"
        rounds += k
    return hits / len(group), rounds / len(group)


def _replay_line(group: list[dict]) -> str:
    cells = []
    for spending in ("obrien-fleming", "pocock"):
        power, rounds = _replay_tput(group, spending)
        cells.append(f"{spending}: regressed {power:.0%}, mean {rounds:.2f} rounds")
    return "- output tok/s alone, replayed from the recorded rounds (stop when it alone is decided or futile): " + "; ".join(cells)


def _cost_line(group: list[dict], stops: list[int], prompts_per_block: int) -> str:
    """Sequential rounds against the smallest fixed N with the sequential design's power for tok/s."""
    seq_power = sum(_stop(r)[1].get("output_throughput") == "regressed" for r in group) / len(group)
    if seq_power == 0:
        return ""
    by_n = _fixed_n_tput(group)
    n_same = next((k for k, pw in sorted(by_n.items()) if pw >= seq_power), None)
    mean_stop = sum(stops) / len(stops)
    curve = ", ".join(f"{k}: {pw:.0%}" for k, pw in sorted(by_n.items()))
    if n_same is None:
        return f"- fixed-N power for output tok/s by rounds ({curve}) never reaches the sequential {seq_power:.0%}"
    return (f"- cost against a fixed-N design with the same tok/s power ({seq_power:.0%}): fixed N = {n_same} rounds "
            f"({2 * prompts_per_block * n_same} prompts); sequential mean {mean_stop:.2f} rounds = "
            f"{mean_stop / n_same:.0%} of it (fixed-N power by rounds: {curve})")


def report(path: Path, where: str = "CPU") -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_label: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_label[r["label"]].append(r)
    aa = next((g for label, g in by_label.items() if label == "aa" or label.endswith("-aa")), [])
    out = [f"# Interleaved comparisons on {where}: error rates, power and cost (issue 12)", "",
           f"Data: `{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}` ({len(rows)} sessions). "
           "Made by `benches/perf/compare_error_rates.py` (the library calls `bench.run` makes). "
           "Per comparison alpha 0.01 over all looks; looks from round "
           f"{min((r['looks'][0]['look'] for r in rows), default='-')}; intervals on rates are exact binomial 95%.", ""]
    for label, group in by_label.items():
        g = group[0]
        out += [f"## {label}: reference [{g['reference']}] vs candidate [{g['candidate']}]", "",
                f"{len(group)} sessions, scenario: {g['prompts_per_block']} ShareGPT prompts × {g.get('output_len', 32)} tokens per block, "
                f"1 user, at most {g['max_rounds']} ABBA rounds.", "",
                "| metric | sequential: regressed / equivalent / inconclusive / improved | fixed-N (all rounds) | "
                "median ratio or diff (fixed-N) |", "|---|---|---|---|"]
        for m in METRICS:
            seq = Counter(_stop(r)[1].get(m) for r in group)
            fixed = Counter(next((c["verdict"] for c in r["fixed_n"] if c["metric"] == m), None) for r in group)
            if not any(k for k in seq if k):
                continue
            ests = sorted(c.get("ratio", c.get("difference")) for r in group for c in r["fixed_n"] if c["metric"] == m)
            med = ests[len(ests) // 2] if ests else float("nan")
            fmt = lambda c: " / ".join(str(c.get(v, 0)) for v in ("regressed", "equivalent", "inconclusive", "improved"))  # noqa: E731
            out.append(f"| {m} | {fmt(seq)} | {fmt(fixed)} | {med:.3f} |")
        stops = [_stop(r)[0] for r in group]
        n_metrics = max(len(_stop(r)[1]) for r in group)
        any_reg = sum(any(v == "regressed" for v in _stop(r)[1].values()) for r in group)
        comps = sum(len(_stop(r)[1]) for r in group)
        regs = sum(sum(v == "regressed" for v in _stop(r)[1].values()) for r in group)
        out += ["", f"- rounds used (sequential): mean {sum(stops) / len(stops):.2f} of {g['max_rounds']} "
                    f"(= {sum(stops) / len(stops) / g['max_rounds']:.0%} of the fixed-N prompts: "
                    f"{2 * g['prompts_per_block'] * sum(stops) / len(stops):.1f} vs "
                    f"{2 * g['prompts_per_block'] * g['max_rounds']} prompts per session); stop rounds {sorted(Counter(stops).items())}",
                f"- regressed comparisons (sequential): {_ci(regs, comps)}; sessions with any regressed "
                f"({n_metrics} comparisons each): {_ci(any_reg, len(group))}",
                f"- output_throughput regressed (sequential): "
                f"{_ci(sum(_stop(r)[1].get('output_throughput') == 'regressed' for r in group), len(group))}; "
                f"fixed-N: {_ci(sum(any(c['metric'] == 'output_throughput' and c['verdict'] == 'regressed' for c in r['fixed_n']) for r in group), len(group))}",
                f"- mean wall time per session: {sum(r['wall_s'] for r in group) / len(group):.0f} s"]
        out.append(_replay_line(group))
        if group is not aa:
            line = _cost_line(group, stops, g["prompts_per_block"])
            if line:
                out.append(line)
        if len(aa) >= 4 and g["config"] == aa[0]["config"]:  # a baseline of the same config only
            history, judged = aa[:3], [r for r in group if r not in aa[:3]]
            for name, model in (("History(k=3), history = 3 earlier A/A reference runs", History(k=3.0, min_runs=3, fallback=Relative(0.30))),
                                ("Relative(5%) band around the same baseline", Relative(0.05))):
                cells = []
                for m in ("output_throughput", "median_tpot_ms"):
                    bad, n = _gate(judged, history, m, model)
                    cells.append(f"{m} {_ci(bad, n)}")
                out.append(f"- stored-baseline gate on the candidate's merged number, {name}: REGRESSED " + "; ".join(cells))
        out.append("")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(report(Path(sys.argv[1])))
