"""Results on disk: ``results.jsonl`` (one JSON object per line, written as each thing finishes) and a
folder per config (server.log, resources.json). Nothing is held back until the end of the session, so
a crash loses at most the scenario in flight.

Records reach the file through the sink (``sink.emit`` → ``pytest_llmbench_record``); the functions
below build them as plain mappings, so nothing here knows about a test or a bench.

Under pytest-xdist each worker writes its own ``results.<worker>.jsonl`` beside the others (no two
processes append to one file); :func:`load_results` reads them all.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmbench import redact
from pytest_llmbench.jsonl import iter_jsonl
from pytest_llmbench.sink import clean

if TYPE_CHECKING:
    import pandas as pd

    from pytest_llmbench.config import ServerConfig
    from pytest_llmbench.server import LLMServer
    from pytest_llmbench.workload.scenario import ScenarioResult


class ResultsWriter:
    """The results.jsonl sink (registered as a plugin: it implements ``pytest_llmbench_record``) and the
    folder per config that artifacts go into."""

    def __init__(self, root: Path, worker: str | None = None):
        self.dir = Path(root)  # created on first write: a run that measures nothing leaves no folder
        self.path = self.dir / (f"results.{worker}.jsonl" if worker else "results.jsonl")
        self._lock = threading.Lock()
        #: who wrote these lines (runner profile, host, shard), on every line so merged folders keep it
        self.origin: dict[str, Any] | None = None

    def unwritable(self) -> str | None:
        """Why results could not be written here (checked before any server starts), or None. Checks
        without creating anything: a run that measures nothing leaves no folder."""
        p = self.dir
        while not p.exists():
            if p.parent == p:
                return f"{self.dir}: no existing parent folder"
            p = p.parent
        if not p.is_dir():
            return f"{self.dir}: {p} is a file, not a folder"
        if not os.access(p, os.W_OK | os.X_OK):
            return f"{self.dir}: {p} is not writable by this user"
        return None

    def server_dir(self, config_name: str) -> Path:
        d = self.dir / config_name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write(self, record: dict[str, Any]) -> None:
        """Append one JSON line and flush it to disk now."""
        if self.origin is not None:
            record = {**record, "origin": self.origin}
        line = redact.scrub(json.dumps(clean(record), sort_keys=True))
        self.dir.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    @pytest.hookimpl
    def pytest_llmbench_record(self, record: Mapping[str, Any]) -> None:
        self.write(dict(record))

    def write_resources(self, config_name: str, facts: Mapping[str, Any]) -> Path:
        """``<config>/resources.json``: what the server used (startup time, memory, KV pool)."""
        path = self.server_dir(config_name) / "resources.json"
        path.write_text(json.dumps(clean(dict(facts)), indent=2, sort_keys=True) + "\n")
        return path


# ---- plain records: what each kind of line holds ----------------------------------------------------
def server_line(server: LLMServer) -> dict[str, Any]:
    """A server started: what it runs and how (secrets masked)."""
    cfg = server.config
    return {
        "record": "server",
        "config": server.name,
        "engine": cfg.engine,
        "launcher": cfg.launcher,
        "model": cfg.model.describe(),
        "server_args": redact.args(cfg.args),
        "env": redact.env(cfg.env),
        "startup_s": server.startup_s,
        "server_info": server.info,
        "build": server.build,  # binary folder or image, and the build that tells two apart
        "gpu_ids": list(server.gpu_ids),
        "pids": server.handle.pids(),
        "time": _now(),
    }


def scenario_line(result: ScenarioResult, cfg: ServerConfig | None) -> dict[str, Any]:
    """One scenario: its parameters, metrics (bench_serving names) and every request's timings."""
    sc = result.scenario
    return {
        "record": "scenario",
        "scenario": sc.name,
        "scenario_params": sc.as_dict(),
        "engine": cfg.engine if cfg else None,
        "model": cfg.model.describe() if cfg else None,
        "server_args": redact.args(cfg.args) if cfg else [],
        "server_info": result.server_info,
        "backend": cfg.engine if cfg else None,
        "dataset_name": sc.dataset,
        "max_concurrency": sc.concurrency,
        "random_input_len": sc.input_len,
        "random_output_len": sc.output_len,
        "num_prompts": sc.num_prompts,
        "notes": result.notes,
        "errors": result.errors[:20],
        "metrics": result.metrics,
        "time": _now(),
        "host_load": result.host_load.as_dict() if result.host_load else None,
        "requests": [
            {
                "index": r.index,
                "ok": r.ok,
                "error": r.error,
                "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens,
                "ttft_s": r.ttft_s,
                "e2e_s": r.e2e_s,
                "tpot_s": r.tpot_s,
                "finish_reason": r.finish_reason,
                "accept_length": r.spec.accept_length if r.spec else None,
            }
            for r in result.records
        ],
    }


def end_of_test_line(measurements: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a test recorded (long per-sample lists left out), at its end."""
    return {
        "record": "test",
        "time": _now(),
        "measurements": {k: v for k, v in measurements.items() if not isinstance(v, (list, tuple)) or len(v) <= 1000},
    }


def facts_line(config_name: str, facts: Mapping[str, Any]) -> dict[str, Any]:
    return {"record": "facts", "config": config_name, "facts": dict(facts), "time": _now()}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def iter_records(results_dir: Path | str, kind: str | None = None, after: Mapping[str, int] | None = None):
    """Every JSON object in a results folder's results*.jsonl, optionally of one record kind; ``after``
    (from :func:`record_counts`) skips each file's first lines: what an earlier session in the same
    folder wrote."""
    root = Path(results_dir)
    files = sorted(root.glob("results*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no results*.jsonl in {root}")
    for f in files:
        skip = (after or {}).get(f.name, 0)
        for n, (_, obj) in enumerate(iter_jsonl(f)):
            if n >= skip and (kind is None or obj.get("record") == kind):
                yield obj


def record_counts(results_dir: Path | str) -> dict[str, int]:
    """How many records each results*.jsonl of a folder holds now (none: an empty mapping): taken at a
    session's start, so that a reused ``--results-dir`` never lends its earlier sessions' records to this
    one's verdict."""
    root = Path(results_dir)
    return {f.name: sum(1 for _ in iter_jsonl(f)) for f in sorted(root.glob("results*.jsonl"))}


def load_results(results_dir: Path | str) -> pd.DataFrame:
    """One row per measured scenario: config, test, scenario, engine, and every metric as a column."""
    import pandas as pd

    rows = []
    for obj in iter_records(results_dir, "scenario"):
        row = {k: obj.get(k) for k in ("config", "test", "test_key", "scenario", "engine", "model", "time")}
        row.update(obj.get("metrics") or {})
        rows.append(row)
    return pd.DataFrame(rows)
