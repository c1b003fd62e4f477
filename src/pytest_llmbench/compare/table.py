"""The comparison table printed at the end of a session: regressions first, then what is unclear.

Built from the ``comparison`` and ``arm_start`` records of results.jsonl (every xdist worker's), so
the controller prints one table for the whole session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_llmbench.report.table import render as aligned

ORDER = {"regressed": 0, "inconclusive": 1, "improved": 2, "equivalent": 3}


def _num(x: Any) -> str:
    if not isinstance(x, (int, float)):
        return "-"
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


def estimate(rec: Mapping[str, Any]) -> str:
    """``×0.874 [0.85, 0.90]`` for a ratio, ``-1.07 [-1.91, -0.228]`` for a difference."""
    if rec.get("ratio") is not None:
        return f"×{rec['ratio']:.3f} [{rec['ci_low']:.3f}, {rec['ci_high']:.3f}]"
    if rec.get("difference") is not None:
        return f"{rec['difference']:+.3g} [{rec['ci_low']:+.3g}, {rec['ci_high']:+.3g}]"
    return "-"


def _short_test(rec: Mapping[str, Any]) -> str:
    test = str(rec.get("test_key") or rec.get("nodeid") or "")
    return test.rsplit("::", 1)[-1]


def sort_key(rec: Mapping[str, Any]) -> tuple:
    return (ORDER.get(str(rec.get("suite_verdict") or rec.get("verdict")), 9), rec.get("config") or "",
            rec.get("test_key") or "", rec.get("metric") or "")


def render(comparisons: Iterable[Mapping[str, Any]]) -> list[str]:
    rows = sorted(comparisons, key=sort_key)
    if not rows:
        return []
    header = ["verdict", "config", "test", "metric", "reference", "candidate", "cand/ref or diff [CI]", "rounds",
              "prompts", "p", "q"]
    body = []
    for r in rows:
        verdict = str(r.get("suite_verdict") or r.get("verdict"))
        body.append([verdict.upper() if verdict == "regressed" else verdict, str(r.get("config")), _short_test(r),
                     str(r.get("metric")), _num(r.get("reference")), _num(r.get("candidate")), estimate(r),
                     str(r.get("rounds", "-")), str(r.get("prompts", "-")), _num(r.get("p_value")),
                     _num(r.get("q_value"))])
    return aligned(body, header, right=set()).split("\n")


def counts(comparisons: Sequence[Mapping[str, Any]]) -> str:
    by: dict[str, int] = {}
    for r in comparisons:
        v = str(r.get("suite_verdict") or r.get("verdict"))
        by[v] = by.get(v, 0) + 1
    rounds = [r.get("rounds") for r in comparisons if isinstance(r.get("rounds"), int)]
    prompts = [r.get("prompts") for r in comparisons if isinstance(r.get("prompts"), int)]
    parts = [f"{by[v]} {v}" for v in ORDER if by.get(v)]
    cost = ""
    if rounds:
        cost = f"; rounds used per scenario {min(rounds)}–{max(rounds)}, prompts sent (both arms) {sum(_prompts_per_run(comparisons))}"
    return f"{len(comparisons)} comparisons: " + ", ".join(parts) + cost


def _prompts_per_run(comparisons: Sequence[Mapping[str, Any]]) -> list[int]:
    """Prompts per scenario run (several metrics share one run: counted once)."""
    seen: dict[tuple, int] = {}
    for r in comparisons:
        if isinstance(r.get("prompts"), int):
            seen[(r.get("nodeid"), r.get("scenario"))] = r["prompts"]
    return list(seen.values())


def arms_lines(starts: Iterable[Mapping[str, Any]]) -> list[str]:
    """Startup time and memory per arm, per config: candidate/reference ratio of the means."""
    by_config: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for s in starts:
        by_config.setdefault(str(s.get("config")), {}).setdefault(str(s.get("role")), []).append(s)
    out = []
    for config, roles in sorted(by_config.items()):
        parts = []
        for key, unit, scale in (("startup_s", "s", 1.0), ("host_rss_bytes", "MiB", 2**20), ("gpu_memory_gb", "GB", 1.0)):
            means = {}
            for role in ("reference", "candidate"):
                vals = [float(x[key]) / scale for x in roles.get(role, []) if isinstance(x.get(key), (int, float))]
                if vals:
                    means[role] = (sum(vals) / len(vals), len(vals))
            if len(means) == 2 and means["reference"][0] > 0:
                (ra, rn), (ca, cn) = means["reference"], means["candidate"]
                parts.append(f"{key.split('_')[0] if key != 'host_rss_bytes' else 'RSS'} {ra:.1f}→{ca:.1f} {unit} "
                             f"(×{ca / ra:.2f}, {rn}+{cn} starts)")
        labels = {role: (roles.get(role) or [{}])[0].get("label") for role in ("reference", "candidate")}
        out.append(f"{config}: reference [{labels['reference']}] vs candidate [{labels['candidate']}]: "
                   + ("; ".join(parts) or "no start measured"))
    return out
