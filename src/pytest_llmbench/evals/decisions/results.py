"""Decision results on disk: every raw answer, the fitted calibration, and the baseline answers.

Beside the results of a config (``<results>/<config>/decisions/``): ``<name>.answers.jsonl`` (one line
per decision, failures included, so anything can be re-scored or paired later), ``calibration.json``
(the posts' file: temperatures, priors, before/after metrics) and a ``"decisions"`` line in
results.jsonl. Answers are files, not session state, so a paired comparison between two configs works
even when pytest-xdist ran them in different workers.

Baseline answers (for the run-vs-baseline paired interval) live in
``<baselines>/decisions/<config>/<name>.answers.jsonl``; they are written only under
``--update-baselines``, one file per config and dataset, by the one process that ran that config.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_llmbench.datasets.decision_schema import Decision
from pytest_llmbench.evals.decisions.calibration import write_json


def answers_path(folder: Path, name: str) -> Path:
    return Path(folder) / f"{name}.answers.jsonl"


def write_answers(path: Path, decisions: Iterable[Decision]) -> Path:
    """All decisions as JSONL, written atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        for d in decisions:
            f.write(json.dumps(d.to_json()) + "\n")
    os.replace(tmp, path)
    return path


def read_answers(path: Path) -> list[Decision]:
    with open(path, encoding="utf-8") as f:
        return [Decision.from_json(json.loads(line)) for line in f if line.strip()]


def decisions_dir(bench: Any) -> Path:
    """``<results>/<config>/decisions`` for the bench's config (results dir root without a server)."""
    return bench.artifact_dir("decisions")


def save_run(
    bench: Any, name: str, decisions: list[Decision], metrics: dict[str, Any], extra: dict[str, Any] | None = None
) -> Path:
    """Write the answers file and emit one ``"decisions"`` record; returns the answers path."""
    path = write_answers(answers_path(decisions_dir(bench), name), decisions)
    bench.emit({"record": "decisions", "dataset": name, "answers": str(path), "metrics": metrics, **(extra or {})})
    return path


def save_calibration(bench: Any, payload: dict[str, Any], filename: str = "calibration.json") -> Path:
    """The fitted parameters and their before/after metrics, beside the config's results."""
    return write_json(decisions_dir(bench) / filename, payload)


def config_answers(bench: Any, config_name: str, name: str) -> list[Decision] | None:
    """Answers a config (this one or another) wrote earlier in this session (same results folder), or None."""
    path = answers_path(bench.artifact_dir("decisions", config=config_name), name)
    return read_answers(path) if path.exists() else None


def baseline_answers_path(bench: Any, name: str) -> Path:
    from pytest_llmbench.gate.options import baselines_dir

    return answers_path(baselines_dir(bench.item.config) / "decisions" / (bench.config_name or "_"), name)


def baseline_answers(bench: Any, name: str) -> list[Decision] | None:
    path = baseline_answers_path(bench, name)
    return read_answers(path) if path.exists() else None


def maybe_update_baseline_answers(bench: Any, name: str, decisions: list[Decision]) -> Path | None:
    """Under ``--update-baselines`` (``=new``: only when none exists), store these answers as the baseline."""
    config = bench.item.config
    mode = config.getoption("llmbench_update_baselines", None)
    if not mode:
        return None
    # One file per config and dataset, and a config's tests run in one process (xdist_group), so
    # no two processes ever write the same file.
    path = baseline_answers_path(bench, name)
    if mode == "new" and path.exists():
        return None
    return write_answers(path, decisions)
