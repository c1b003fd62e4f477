"""The report's tables as rows of display strings: one definition shared by summary.md and report.html.

Each function returns a :class:`Table` (title, header, rows); the renderers only decide markup. Fields
other branches add later (``p_value``, ``q_value``, ``paired``, ``family`` on verdicts; ``comparison``
records) are read with ``.get`` and their columns appear only when some row has them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_llmbench.gate.types import fmt
from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.records.results import ok_of_planned

STATUS_LABEL = {
    "REGRESSED": "REGRESSED",
    "improved": "improved",
    "not comparable": "not comparable",
    "learning": "learning",
    "new": "new",
    "pass": "pass",
}


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    #: per row, a CSS-ish class for the renderer (the verdict status), "" when none
    kinds: list[str] = field(default_factory=list)
    note: str = ""


def _num(x: Any, spec: str = "") -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return "-" if x is None else str(x)
    return format(x, spec) if spec else fmt(x)


def _pct(x: Any) -> str:
    return f"{x:+.1f}%" if isinstance(x, (int, float)) else "-"


def _p(x: Any) -> str:
    if not isinstance(x, (int, float)):
        return "-"
    return f"{x:.2g}" if x >= 1e-3 else f"{x:.1e}"


def verdict_table(folder: ResultsFolder) -> Table:
    verdicts = folder.verdicts()
    extra = [
        (key, title, show)
        for key, title, show in (
            ("p_value", "p", _p),
            ("q_value", "q", _p),
            ("paired", "paired", lambda v: "-" if v is None else ("yes" if v else "no")),
            ("family", "family", lambda v: "-" if v is None else str(v)),
        )
        if any(v.get(key) is not None for v in verdicts)
    ]
    header = [
        "verdict",
        "config",
        "test",
        "metric",
        "baseline",
        "observed",
        "delta %",
        "tolerance",
        *(t for _, t, _ in extra),
        "rule",
    ]
    rows, kinds = [], []
    for v in verdicts:
        status = str(v.get("status", "?"))
        label = STATUS_LABEL.get(status, status) + (
            " (recorded)" if v.get("recorded") and status in ("REGRESSED", "improved") else ""
        )
        rows.append(
            [
                label,
                str(v.get("config") or "-"),
                str(v.get("test_key") or "-"),
                str(v.get("metric")),
                _num(v.get("baseline")),
                _num(v.get("observed")),
                _pct(v.get("delta_pct")),
                _num(v.get("tolerance")),
                *(show(v.get(k)) for k, _, show in extra),
                str(v.get("rule") or ""),
            ]
        )
        kinds.append(status)
    return Table("Verdicts", header, rows, kinds, note=counts(verdicts))


def counts(verdicts: Sequence[Mapping[str, Any]]) -> str:
    """``1 REGRESSED, 3 new, 40 pass`` in table order."""
    parts = []
    for s in STATUS_LABEL:
        n = sum(v.get("status") == s for v in verdicts)
        if n:
            parts.append(f"{n} {s}")
    return ", ".join(parts) or "no verdicts"


def comparison_table(folder: ResultsFolder) -> Table | None:
    """Arms compared in the run (``comparison`` records): ratio candidate/reference with its interval, and
    why each verdict is what it is. What repeats per metric (the stop reason of a scenario, the statistic
    of a metric) goes once into the note, not into every row."""
    from pytest_llmbench.compare import table as T
    from pytest_llmbench.report.reasons import reason

    comps = folder.comparisons()  # q and the suite verdict: comparison_suite records (compare/suite.py)
    if not comps:
        return None

    header = [
        "verdict",
        "config",
        "scenario",
        "metric",
        "reference",
        "candidate",
        "estimate",
        "95% interval",
        "p",
        "q",
        "rounds",
        "rules out",
        "could catch",
        "why",
    ]
    rows, kinds = [], []
    for c in sorted(comps, key=T.sort_key):
        lo, hi = c.get("ci_low"), c.get("ci_high")
        interval = f"[{_num(lo, '.3f')}, {_num(hi, '.3f')}]" if lo is not None and hi is not None else "-"
        verdict = str(c.get("suite_verdict") or c.get("verdict") or "-")
        estimate = c.get("ratio") if c.get("ratio") is not None else c.get("difference")
        rows.append(
            [
                verdict,
                str(c.get("config") or "-"),
                str(c.get("scenario") or "-"),
                str(c.get("metric") or "-"),
                _num(c.get("reference")),
                _num(c.get("candidate")),
                _num(estimate, ".3f"),
                interval,
                _num(c.get("p_value"), ".3g"),
                _num(c.get("q_value"), ".3g"),
                _num(c.get("rounds")),
                T.size_text(c, c.get("rules_out")),
                T.size_text(c, c.get("detectable")),
                reason(c),
            ]
        )
        kinds.append(verdict)
    note = "\n".join(
        [
            f"{T.counts(comps)}. Arms: {arms_note(folder, comps)}; could catch: the worsening caught with 95%"
            " power at the measured SD (an estimate).",
            *stop_lines(comps),
            *(f"Statistic of {line.strip()}" for line in T.statistic_lines(comps)),
        ]
    )
    return Table("Comparisons (candidate / reference)", header, rows, kinds, note=note)


def stop_lines(comps: list[dict[str, Any]]) -> list[str]:
    """How each scenario's comparison stopped, once per (config, scenario): every metric of a scenario
    shares its units, so its stop reason is one text (it made each row ~170 px tall, repeated per metric)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for c in comps:
        text = str(c.get("stop_reason") or c.get("stop") or "")
        reasons = seen.setdefault((str(c.get("config") or "-"), str(c.get("scenario") or "-")), [])
        if text and text not in reasons:
            reasons.append(text)
    return [f"Stopped, {config} · {scenario}: {'; '.join(r)}." for (config, scenario), r in seen.items() if r]


SCENARIO_COLUMNS = (
    ("out tok/s", "output_throughput", ",.1f"),
    ("req/s", "request_throughput", ".2f"),
    ("TTFT med ms", "median_ttft_ms", ",.1f"),
    ("TTFT p99 ms", "p99_ttft_ms", ",.1f"),
    ("TPOT med ms", "median_tpot_ms", ".2f"),
    ("ITL p99 ms", "p99_itl_ms", ".2f"),
)


def scenario_table(folder: ResultsFolder) -> Table | None:
    scenarios = of_kind(folder.records, "scenario")
    if not scenarios:
        return None
    header = ["config", "scenario", "ok/n", "prompt tok", *(c[0] for c in SCENARIO_COLUMNS), "accept len"]
    rows = []
    for s in scenarios:
        m = s.get("metrics") or {}
        prompt = mean_prompt_tokens(s)
        acc = m.get("accept_length")
        acc_s = (
            "-"
            if acc is None
            else (f"{acc:.2f} ± {m['accept_length_se']:.2f}" if m.get("accept_length_se") is not None else f"{acc:.2f}")
        )
        rows.append(
            [
                str(s.get("config") or "-"),
                str(s.get("scenario") or "-"),
                ok_of_planned(s),  # an interrupted scenario: done of planned
                "-" if prompt is None else f"{prompt:,.0f}",
                *(_num(m.get(key), spec) for _, key, spec in SCENARIO_COLUMNS),
                acc_s,
            ]
        )
    return Table("Serving scenarios", header, rows)


def mean_prompt_tokens(scenario: Mapping[str, Any]) -> float | None:
    """Mean prompt length of a scenario's successful requests (what the x axis of the plots shows)."""
    got = [
        r["prompt_tokens"]
        for r in scenario.get("requests") or []
        if r.get("ok") and isinstance(r.get("prompt_tokens"), (int, float))
    ]
    return sum(got) / len(got) if got else None


def eval_table(folder: ResultsFolder) -> Table | None:
    """One row per eval result: accept length per set, BFCL totals, decision accuracy/ECE before and after."""
    rows = []
    for r in folder.kind("accept_length"):
        a = r.get("accept_length") or {}
        rows.append(
            [
                str(r.get("config")),
                "accept length",
                str(r.get("set") or "-"),
                f"{_num(a.get('mean'), '.3f')} ± {_num(a.get('se'), '.3f')} (n={a.get('n')})",
            ]
        )
    for r in folder.kind("bfcl"):
        cats = ", ".join(
            f"{c} {v.get('passed')}/{v.get('total')}" for c, v in sorted((r.get("per_category") or {}).items())
        )
        rows.append(
            [str(r.get("config")), "BFCL", str(r.get("mode") or "-"), f"{r.get('passed')}/{r.get('total')} ({cats})"]
        )
    for d in of_kind(folder.records, "decisions"):
        m = d.get("metrics") or {}
        parts = []
        for stage in ("raw", "calibrated", "priors"):
            a = (m.get(stage) or {}).get("all") or {}
            if a:
                parts.append(f"{stage}: acc {_num(a.get('accuracy'), '.3f')}, ECE {_num(a.get('ece'), '.3f')}")
        if parts:
            rows.append([str(r.get("config")), "decisions", str(r.get("dataset") or "-"), "; ".join(parts)])
    for r in folder.kind("tokens_per_answer"):
        total, think = r.get("total_tokens") or {}, r.get("thinking_tokens") or {}
        rows.append(
            [
                str(r.get("config")),
                "tokens per answer",
                "-",
                f"total {_num(total.get('mean'), '.1f')} ± {_num(total.get('se'), '.1f')}, thinking "
                f"{_num(think.get('mean'), '.1f')}; {r.get('answers')} answers, {r.get('cut')} cut at max_tokens",
            ]
        )
    if not rows:
        return None
    return Table("Evals", ["config", "eval", "set", "result"], rows)


FACT_KEYS = (
    ("startup s", ("startup_s",)),
    ("GPU GB after load", ("gpu_memory_used_gb",)),
    ("host RSS GiB", ("host_rss_gib",)),
    ("KV pool tokens", ("kv_cache_tokens", "max_total_num_tokens")),
    ("mamba slots", ("max_mamba_cache_size",)),
    ("context", ("n_ctx", "context_len")),
    ("slots", ("slots", "max_running_requests")),
)


def facts_table(folder: ResultsFolder) -> Table | None:
    """Per config: startup, memory, KV pool (resources.json) and provenance (engine, build, model, runner)."""
    if not folder.configs:
        return None
    runners: dict[str | None, Any] = {}  # config → its runner (the first verdict naming one)
    for v in of_kind(folder.records, "verdict"):
        if v.get("runner"):
            runners.setdefault(v.get("config"), v["runner"])
    rows = []
    for name in folder.configs:
        facts, server = folder.facts(name), folder.server(name)
        if not facts and not server:
            continue
        cells = [
            name,
            str(server.get("engine") or facts.get("engine") or "-"),
            build_text(server, facts),
            str(server.get("model") or "-"),
            runners.get(name, "-"),
        ]
        for _, keys in FACT_KEYS:
            val = next((facts[k] for k in keys if facts.get(k) is not None), None)
            if val is None and keys[0] == "startup_s":
                val = server.get("startup_s")
            cells.append(_summarise(val))
        rows.append(cells)
    if not rows:
        return None
    return Table("Servers", ["config", "engine", "image / build", "model", "runner", *(k for k, _ in FACT_KEYS)], rows)


def build_text(server: Mapping[str, Any], facts: Mapping[str, Any] | None = None) -> str:
    """``<binary folder or image> · <build>``: the launcher's identity of the build (package version, image
    digest or program hash: launchers/identity.py), then the engine's own word when it adds something."""
    facts = facts or {}
    ident = server.get("build") or {}
    info = server.get("server_info") or {}
    own = info.get("build_info") or info.get("version") or facts.get("engine_build")
    parts = [
        ident.get("image") or server.get("image") or facts.get("image") or ident.get("binary"),
        ident.get("build"),
        own if own != ident.get("build") else None,
    ]
    return " · ".join(str(p) for p in parts if p) or "-"


def arms_note(folder: ResultsFolder, comps: list[dict[str, Any]]) -> str:
    """Each compared config's arms: what each changes and the build it ran (``<config>.reference``'s server
    record for the reference, the config's own for the candidate)."""
    lines = []
    for config in dict.fromkeys(str(c.get("config")) for c in comps):
        first = next(c for c in comps if str(c.get("config")) == config)
        arms = [
            f"{role} {first.get(f'{role}_arm') or '-'} ({build_text(folder.server(name))})"
            for role, name in (("reference", f"{config}.reference"), ("candidate", config))
        ]
        lines.append(f"{config}: " + " vs ".join(arms))
    return "; ".join(lines)


def _summarise(val: Any) -> str:
    if isinstance(val, dict):
        return ", ".join(f"{k}: {_summarise(v)}" for k, v in val.items())
    if isinstance(val, float):
        return fmt(val)
    return "-" if val is None else str(val)
