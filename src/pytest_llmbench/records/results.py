"""Results on disk: ``results.jsonl`` (one JSON object per line, written as each thing finishes) and a
folder per config (server.log, resources.json). Nothing is held back until the end of the session, so
a crash loses at most the scenario in flight.

Records reach the file through the sink (``sink.emit`` → ``pytest_llmbench_record``); the functions
below build them as plain mappings, so nothing here knows about a test or a bench.

Under pytest-xdist each worker writes its own ``results.<worker>.jsonl`` beside the others (no two
processes append to one file); :func:`load_results` reads them all.

Every line carries its session's ``session_id`` (an xdist worker's is its controller's), so two sessions
writing one folder at once stay apart: each reads its own lines back for its headline and tables, and a
session that finds another live in the folder (a ``.llmbench-session.<id>`` marker whose process runs)
keeps its server logs in ``<config>/session-<id>/``. A line cut short by a crash is skipped with a
warning by every reader, and the next session starts its lines on a fresh line.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmbench import redact
from pytest_llmbench.gate.files import write_atomic
from pytest_llmbench.jsonl import iter_jsonl
from pytest_llmbench.records.kinds import stamped
from pytest_llmbench.records.read import read_line
from pytest_llmbench.sink import clean

if TYPE_CHECKING:
    import pandas as pd

    from pytest_llmbench.config import ServerConfig
    from pytest_llmbench.server import LLMServer
    from pytest_llmbench.workload.scenario import ScenarioResult


MARKER = ".llmbench-session."  # + session id: a session writing this folder now (holds its pid)


def new_session_id() -> str:
    """Sortable by start time, unique across hosts: ``20261205T091500-3fa2c1``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


class ResultsWriter:
    """The results.jsonl sink (registered as a plugin: it implements ``pytest_llmbench_record``) and the
    folder per config that artifacts go into."""

    def __init__(self, root: Path, worker: str | None = None, session_id: str | None = None, owner_pid: int = 0):
        self.dir = Path(root)  # created on first write: a run that measures nothing leaves no folder
        self.path = self.dir / (f"results.{worker}.jsonl" if worker else "results.jsonl")
        self._lock = threading.Lock()
        #: who wrote these lines (runner profile, host, shard), on every line so merged folders keep it
        self.origin: dict[str, Any] | None = None
        #: this session's id, on every line (an xdist worker gets its controller's)
        self.session_id = session_id or new_session_id()
        self.owner_pid = owner_pid or os.getpid()  # the session's controller process
        self._opened = False

    def unwritable(self) -> str | None:
        """Why results could not be written here (checked before any server starts), or None. Creates
        nothing that stays: a probe file in the nearest existing folder shows that files can be made
        there (``os.access`` says yes to root under /proc and on a read-only mount)."""
        p = self.dir
        while not p.exists():
            if p.parent == p:
                return f"{self.dir}: no existing parent folder"
            p = p.parent
        if not p.is_dir():
            return f"{self.dir}: {p} is a file, not a folder"
        if not os.access(p, os.W_OK | os.X_OK):
            return f"{self.dir}: {p} is not writable by this user"
        try:
            fd, probe = tempfile.mkstemp(prefix=".llmbench-probe-", dir=p)
        except OSError as e:
            return f"{self.dir}: cannot create files in {p} ({e.strerror or e})"
        os.close(fd)
        os.unlink(probe)
        return None

    # --- sessions sharing the folder ------------------------------------------------------------------

    def _mark_live(self) -> None:
        """Say, in the folder, that this session runs servers into it now (removed by :meth:`close`)."""
        marker = self.dir / f"{MARKER}{self.session_id}"
        if not marker.exists():
            marker.write_text(f"{self.owner_pid}\n", encoding="utf-8")

    def others_live(self) -> list[str]:
        """Ids of the other sessions writing this folder now (their marker's process still runs)."""
        out = []
        for marker in sorted(self.dir.glob(f"{MARKER}*")):
            sid = marker.name[len(MARKER) :]
            if sid == self.session_id:
                continue
            try:
                pid = int(marker.read_text(encoding="utf-8").strip() or 0)
            except (OSError, ValueError):
                continue
            if pid > 0 and _running(pid):
                out.append(sid)
        return out

    def close(self) -> None:
        """The session ended: drop its marker (a killed session's stays, and reads as gone: no process)."""
        try:
            (self.dir / f"{MARKER}{self.session_id}").unlink()
        except OSError:
            pass

    def server_dir(self, config_name: str) -> Path:
        """``<results>/<config>``; ``<config>/session-<id>`` while another session writes this folder too,
        so two sessions' servers never log into one server.log."""
        d = self.dir / config_name
        self.dir.mkdir(parents=True, exist_ok=True)
        self._mark_live()
        if self.others_live():
            d = d / f"session-{self.session_id}"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one JSON line and flush it to disk now: every line of the package goes through here (the
        sink's hook below, the bisect's log), so here a declared kind is checked against its schema and
        stamped with its ``record_version`` (records/kinds.py; a required field missing warns,
        ``RecordSchemaWarning``, and the line is written all the same)."""
        if self.origin is not None:
            record = {**record, "origin": self.origin}
        record = stamped({**record, "session_id": record.get("session_id") or self.session_id})
        line = redact.scrub(json.dumps(clean(record), sort_keys=True))
        self.dir.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            if not self._opened:  # a crash left a line cut short: ours starts on a line of its own
                self._opened = True
                if not _ends_a_line(self.path):
                    line = "\n" + line
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    @pytest.hookimpl
    def pytest_llmbench_record(self, record: Mapping[str, Any]) -> None:
        self.write(dict(record))

    def write_resources(self, config_name: str, facts: Mapping[str, Any]) -> Path:
        """``<config>/resources.json``: what the server used (startup time, memory, KV pool)."""
        path = self.server_dir(config_name) / "resources.json"
        write_atomic(path, json.dumps(clean(dict(facts)), indent=2, sort_keys=True) + "\n")
        return path


def _ends_a_line(path: Path) -> bool:
    """Whether ``path`` is empty or its last byte ends a line."""
    with open(path, "rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return True
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
        "telemetry": result.telemetry.as_dict() if result.telemetry else None,  # /metrics and GPUs over time
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


_INTERRUPTED = re.compile(r"^interrupted \(\w+\) after (\d+) of (\d+) requests")


def ok_of_planned(scenario: Mapping[str, Any]) -> str:
    """``ok/n`` of a scenario record: n is what was planned, so an interrupted scenario reads 2/8 (its note
    says how many of how many), not 2/2."""
    m = scenario.get("metrics") or {}
    ok, failed = m.get("completed", 0) or 0, m.get("failed", 0) or 0
    n = ok + failed
    for note in scenario.get("notes") or []:
        if isinstance(note, str) and (found := _INTERRUPTED.match(note)):
            n = max(n, int(found.group(2)))
    return f"{ok}/{n}"


def now() -> str:
    """A record's ``time``: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


_now = now


def iter_records(
    results_dir: Path | str,
    kind: str | None = None,
    after: Mapping[str, int] | None = None,
    *,
    session: str | None = None,
):
    """Every JSON object in a results folder's results*.jsonl, optionally of one record kind; ``after``
    (from :func:`record_counts`) skips each file's first lines: what an earlier session in the same
    folder wrote; ``session`` keeps one session's lines (its ``session_id``). A line cut short by a crash
    is skipped with a warning (jsonl.TornLineWarning). Each line is read by its schema version
    (records/read.py ``read_line``: none is 1, a newer one is read as is with a warning naming it)."""
    root = Path(results_dir)
    files = sorted(root.glob("results*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no results*.jsonl in {root}")
    warned: set[str] = set()
    for f in files:
        skip = (after or {}).get(f.name, 0)
        for n, (line, obj) in enumerate(iter_jsonl(f, torn="warn")):
            if n < skip or (kind is not None and obj.get("record") != kind):
                continue
            if session is None or obj.get("session_id") == session:
                yield read_line(obj, f"{f}:{line}", warned)


def record_counts(results_dir: Path | str) -> dict[str, int]:
    """How many records each results*.jsonl of a folder holds now (none: an empty mapping)."""
    root = Path(results_dir)
    return {f.name: sum(1 for _ in iter_jsonl(f, torn="warn")) for f in sorted(root.glob("results*.jsonl"))}


def load_results(results_dir: Path | str) -> pd.DataFrame:
    """One row per measured scenario: config, test, scenario, engine, and every metric as a column."""
    import pandas as pd

    rows = []
    for obj in iter_records(results_dir, "scenario"):
        row = {k: obj.get(k) for k in ("config", "test", "test_key", "scenario", "engine", "model", "time")}
        row.update(obj.get("metrics") or {})
        rows.append(row)
    return pd.DataFrame(rows)


#: This session's results writer (results.jsonl + per-config folders), on ``pytest.Config.stash``.
RESULTS = pytest.StashKey[ResultsWriter]()
