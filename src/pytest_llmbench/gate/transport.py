"""The xdist transport: workers judge and measure, the controller merges, adjusts and writes.

A worker sends plain dicts through ``config.workeroutput`` (what execnet can carry); the controller
rebuilds them in ``pytest_testnodedown``. Workers never write baseline files.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from pytest_llmbench.gate.store import Measurement
from pytest_llmbench.gate.types import Verdict

WIRE = "llmbench_gate"  # key in xdist's workeroutput
_VERDICT_FIELDS = {f.name for f in fields(Verdict)}


def outbox(config: Any) -> dict[str, list[dict[str, Any]]]:
    box: dict[str, list[dict[str, Any]]] = config.workeroutput.setdefault(WIRE, {"checks": [], "measurements": []})
    return box


def send_check(config: Any, nodeid: str, v: Verdict) -> None:
    outbox(config)["checks"].append({"nodeid": nodeid, "verdict": asdict(v)})


def send_measurement(config: Any, m: Measurement) -> None:
    outbox(config)["measurements"].append(asdict(m))


def send_counts(config: Any, counts: dict[str, int]) -> None:
    """The budget's gate counts (every worker collects the whole selection, so they agree)."""
    outbox(config)["counts"] = dict(counts)  # type: ignore[assignment]


def receive(node: Any) -> tuple[list[tuple[str, Verdict]], list[Measurement], dict[str, int]]:
    """What one finished worker sent (nothing when it sent nothing, e.g. it crashed before any check)."""
    data = getattr(node, "workeroutput", {}).get(WIRE)
    if not data:
        return [], [], {}
    checks = [
        (c["nodeid"], Verdict(**{k: v for k, v in c["verdict"].items() if k in _VERDICT_FIELDS}))
        for c in data["checks"]
    ]
    return checks, [Measurement(**d) for d in data["measurements"]], dict(data.get("counts") or {})
