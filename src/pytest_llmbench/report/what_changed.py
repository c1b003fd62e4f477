"""Why a run was slower, as report tables: what changed between the arms, and where the host was busy.

The same rows in summary.md and report.html, computed from a results folder's records afterwards as well
as at the end of the session: ``what_changed_tables`` ranks each compared scenario's telemetry
(telemetry/what_changed.py), ``busy_host_table`` lists every scenario and comparison block whose cores
another process took (``host_load.contended``).
"""

from __future__ import annotations

from typing import Any

from pytest_llmbench.records.folder import ResultsFolder
from pytest_llmbench.records.read import of_kind
from pytest_llmbench.report.rows import Table
from pytest_llmbench.telemetry import what_changed as W


def what_changed(folder: ResultsFolder) -> list[W.WhatChanged]:
    """Each compared scenario's ranked changes, regressed first (suite verdicts joined)."""
    return W.from_records([*folder.comparisons(), *of_kind(folder.records, "comparison_block")])


def what_changed_tables(folder: ResultsFolder, top: int | None = W.TOP) -> list[Table]:
    tables = []
    for w in what_changed(folder):
        kinds = ["regressed" if w.regressed and i == 0 else "" for i in range(min(len(w.changes), top or 10**9))]
        note = W.NOTE + (" Host busy: " + "; ".join(w.busy) + "." if w.busy else "")
        tables.append(Table(w.title(), list(W.HEADER), W.rows(w, top), kinds, note))
    return tables


def _load_row(r: dict[str, Any], where: str) -> list[str]:
    load = r.get("host_load") or {}
    top = ", ".join(f"{n} {100 * c:.0f}%" for n, c in (load.get("top") or [])[:3]) or "-"
    return [
        str(r.get("config") or "-"),
        str(r.get("scenario") or "-"),
        where,
        f"{load.get('others', 0):.2f} of {load.get('cores', '-')}",
        f"{load.get('own', 0):.2f}",
        f"{load.get('steal', 0):.2f}",
        top,
    ]


def busy_host_table(folder: ResultsFolder) -> Table | None:
    """Every contended scenario or comparison block; None when the host was never busy."""
    rows = []
    for r in folder.records:
        if not (r.get("host_load") or {}).get("contended"):
            continue
        if r.get("record") == "comparison_block":
            where = f"round {r.get('round')} {r.get('role')}" + (" (warm-up)" if r.get("warmup") else "")
        elif r.get("record") == "scenario":
            where = "scenario"
        else:
            continue
        rows.append(_load_row(r, where))
    if not rows:
        return None
    return Table(
        f"Busy host: {len(rows)} measured window(s) shared their cores with other processes",
        ["config", "scenario", "where", "others' cores", "this test's cores", "VM steal", "busiest others"],
        rows,
        ["regressed"] * len(rows),
        "A timing measured while another process took the cores the server needed is partly the neighbour's "
        "number (host_load.py: contended when others used ≥ 0.25 cores and no idle core was left).",
    )


def tables(folder: ResultsFolder) -> list[Table]:
    """The busy-host table (when the host was busy) then each compared scenario's "what changed"."""
    busy = busy_host_table(folder)
    return [*([busy] if busy else []), *what_changed_tables(folder)]
