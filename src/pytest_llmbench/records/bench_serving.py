"""sglang ``bench_serving`` JSONL out and in: a team's existing bench_serving history is read by ``compare`` and
``history``, and our scenarios feed the dashboards that read bench_serving's lines.

The key names are those of ``sglang/bench_serving.py``'s result dict (the ``--output-file`` line), as
/work/shared/REFERENCE.md lists them: backend, dataset_name, request_rate, max_concurrency,
random_input_len, random_output_len, server_info, duration, completed, total_input_tokens,
total_output_tokens, request/input/output/total_throughput, ``{mean,median,std,p90,p95,p99}_{ttft,tpot,itl,
e2e_latency}_ms``, concurrency, accept_length, max_output_tokens_per_s, max_concurrent_requests. The newer
``python/sglang/benchmark/metrics.py`` is not followed where it differs. ``request_rate`` of a closed-loop
scenario is ``inf`` (bench_serving's default; Python's json writes ``Infinity``, as bench_serving's file has).
``tag`` carries ``config/scenario`` so our own lines read back under their names. With ``--output-details``
bench_serving adds per-request lists (``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``errors``): we
write them, and read them back as requests, so ``compare`` pairs requests when both sides have them.

Imported, a file is one session: each line a ``scenario`` record (config = the tag's config, else the
backend), a ``server`` record per config with the line's ``server_info`` (history's build), and a ``check``
record per headline metric (status ``imported``: history draws it as a point, nothing judged it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_llmbench.errors import LlmbenchError
from pytest_llmbench.gate.metric import default_direction
from pytest_llmbench.jsonl import iter_jsonl

LATENCIES = ("ttft", "tpot", "itl", "e2e_latency")
SUMMARIES = ("mean", "median", "std", "p90", "p95", "p99")
#: bench_serving's result keys, in its order
KEYS: tuple[str, ...] = (
    "backend",
    "dataset_name",
    "request_rate",
    "max_concurrency",
    "random_input_len",
    "random_output_len",
    "server_info",
    "duration",
    "completed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "input_throughput",
    "output_throughput",
    "total_throughput",
    *(f"{s}_{lat}_ms" for lat in LATENCIES for s in SUMMARIES),
    "concurrency",
    "accept_length",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
)
#: a line is bench_serving's when it has these (and no ``record`` kind of ours)
REQUIRED = ("backend", "completed", "duration", "output_throughput")
#: the metrics an imported line gives history a point for
HISTORY_METRICS = (
    "output_throughput",
    "request_throughput",
    "mean_ttft_ms",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "median_itl_ms",
    "median_e2e_latency_ms",
)


class BenchServingError(LlmbenchError):
    """A file that is not bench_serving JSONL (or a results folder with nothing to export); names it."""


# --- export ------------------------------------------------------------------------------------------------


def export_line(scenario: Mapping[str, Any], *, details: bool = True) -> dict[str, Any]:
    """One ``scenario`` record of results.jsonl → one bench_serving line."""
    m = scenario.get("metrics") or {}
    params = scenario.get("scenario_params") or {}
    rate = params.get("request_rate")
    line: dict[str, Any] = {
        "tag": f"{scenario.get('config')}/{scenario.get('scenario')}",
        "backend": scenario.get("backend") or scenario.get("engine"),
        "dataset_name": scenario.get("dataset_name"),
        "request_rate": float(rate) if rate is not None else math.inf,
        "max_concurrency": scenario.get("max_concurrency"),
        "random_input_len": scenario.get("random_input_len"),
        "random_output_len": scenario.get("random_output_len"),
        "server_info": scenario.get("server_info") or {},
    }
    for key in KEYS:
        if key not in line and key in m:
            line[key] = m[key]
    requests = scenario.get("requests") or []
    if details and requests:
        line["input_lens"] = [r.get("prompt_tokens") for r in requests]
        line["output_lens"] = [r.get("completion_tokens") or 0 if r.get("ok") else 0 for r in requests]
        line["ttfts"] = [r.get("ttft_s") or 0.0 if r.get("ok") else 0.0 for r in requests]
        line["itls"] = [_itls(r) for r in requests]
        line["errors"] = [r.get("error") or "" for r in requests]
        line["e2e_latencies"] = [r.get("e2e_s") or 0.0 if r.get("ok") else 0.0 for r in requests]
    return line


def _itls(r: dict[str, Any]) -> list[float]:
    """A request's gaps as bench_serving lists them; ours keep the TPOT, so n - 1 equal gaps of it."""
    n, tpot = r.get("completion_tokens") or 0, r.get("tpot_s")
    if not r.get("ok") or tpot is None or n < 2:
        return []
    return [float(tpot)] * (int(n) - 1)


def export_lines(scenarios: Iterable[Mapping[str, Any]], *, details: bool = True) -> str:
    """The file's text: one line per scenario record (``json.dumps``: ``inf`` as bench_serving writes it)."""
    return "".join(json.dumps(export_line(s, details=details)) + "\n" for s in scenarios)


# --- import ------------------------------------------------------------------------------------------------


def is_bench_serving(path: Path) -> bool:
    """A file whose first object is a bench_serving line (not a results folder's record)."""
    if not path.is_file():
        return False
    try:
        for _, row in iter_jsonl(path):
            return "record" not in row and all(k in row for k in REQUIRED)
    except (ValueError, OSError, UnicodeDecodeError):
        return False
    return False


def read_records(path: Path | str) -> list[dict[str, Any]]:
    """A bench_serving JSONL file as one session's records (records/folder.py reads a file through this); a line that is not bench_serving's is an error
    naming file:line and the keys it lacks."""
    p = Path(path)
    records: list[dict[str, Any]] = []
    servers: dict[str, dict[str, Any]] = {}
    seen: dict[tuple[str, str], int] = {}
    for n, row in iter_jsonl(p, BenchServingError):
        missing = [k for k in REQUIRED if k not in row]
        if "record" in row or missing:
            raise BenchServingError(
                f"{p}:{n}: not a bench_serving line"
                + (f" (missing {', '.join(missing)})" if missing else f" (a results record {row['record']!r})")
            )
        config, scenario = _names(row)
        seen[config, scenario] = seen.get((config, scenario), 0) + 1
        if seen[config, scenario] > 1:  # the same run twice in one file (an appended re-run): keep both apart
            scenario = f"{scenario} #{seen[config, scenario]}"
        servers.setdefault(config, {"record": "server", "config": config, "server_info": row.get("server_info") or {}})
        records.append(_scenario(row, config, scenario, f"{p.name}:{n}"))
        records.extend(_checks(row, config, scenario))
    if not records:
        raise BenchServingError(f"{p}: no bench_serving lines")
    return [*servers.values(), *records]


def _names(row: dict[str, Any]) -> tuple[str, str]:
    tag = row.get("tag")
    if isinstance(tag, str) and "/" in tag:
        config, _, scenario = tag.partition("/")
        return config, scenario
    rate = row.get("request_rate")
    parts = [
        str(row.get("dataset_name") or "dataset"),
        f"rate {rate:g}" if isinstance(rate, (int, float)) else f"rate {rate}",
        f"conc {row.get('max_concurrency')}",
    ]
    if row.get("random_input_len") is not None or row.get("random_output_len") is not None:
        parts.append(f"in {row.get('random_input_len')} out {row.get('random_output_len')}")
    return str(tag or row.get("backend")), " ".join(parts)


def _scenario(row: dict[str, Any], config: str, scenario: str, source: str) -> dict[str, Any]:
    metrics = {k: row[k] for k in KEYS if k in row and k not in ("backend", "server_info")}
    rate = row.get("request_rate")
    return {
        "record": "scenario",
        "config": config,
        "scenario": scenario,
        "backend": row.get("backend"),
        "dataset_name": row.get("dataset_name"),
        "max_concurrency": row.get("max_concurrency"),
        "random_input_len": row.get("random_input_len"),
        "random_output_len": row.get("random_output_len"),
        "scenario_params": {"request_rate": rate if isinstance(rate, (int, float)) and math.isfinite(rate) else None},
        "server_info": row.get("server_info") or {},
        "metrics": metrics,
        "source": source,
        "requests": list(_requests(row)),
    }


def _requests(row: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """--output-details lists → our per-request fields (latency = TTFT + the gaps when not given)."""
    ttfts, itls = row.get("ttfts"), row.get("itls")
    if not isinstance(ttfts, list):
        return
    outs, ins = row.get("output_lens") or [], row.get("input_lens") or []
    errors, e2es = row.get("errors") or [], row.get("e2e_latencies") or []
    for i, ttft in enumerate(ttfts):
        n = outs[i] if i < len(outs) else None
        error = errors[i] if i < len(errors) else ""
        gaps = itls[i] if isinstance(itls, list) and i < len(itls) and isinstance(itls[i], list) else []
        ok = not error and bool(n) and isinstance(ttft, (int, float)) and ttft > 0
        e2e = e2es[i] if i < len(e2es) and e2es[i] else (ttft + sum(gaps) if ok else None)
        yield {
            "index": i,
            "ok": ok,
            "error": error or None,
            "prompt_tokens": ins[i] if i < len(ins) else None,
            "completion_tokens": n,
            "ttft_s": ttft if ok else None,
            "e2e_s": e2e if ok else None,
            "tpot_s": (e2e - ttft) / (n - 1) if ok and e2e is not None and n and n > 1 else None,
        }


def _checks(row: dict[str, Any], config: str, scenario: str) -> Iterable[dict[str, Any]]:
    for metric in HISTORY_METRICS:
        value = row.get(metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            yield {
                "record": "check",
                "config": config,
                "test_key": scenario,
                "metric": metric,
                "observed": float(value),
                "direction": default_direction(metric),
                "runner": "bench_serving",
                "status": "imported",
            }
