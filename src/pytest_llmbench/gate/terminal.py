"""What the gate says on the terminal at the session's end. Apart from gate/session.py (which decides and
records) because the wording is read by people and pinned by tests, as compare/terminal.py is for
comparisons."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_llmbench.gate import table
from pytest_llmbench.gate.budget import FAMILIES, Budget
from pytest_llmbench.gate.store import Written
from pytest_llmbench.gate.types import Verdict


class GateSession(Protocol):
    """What of gate/session.py's GateSession the summary reads (a protocol: the session imports this module)."""

    config: pytest.Config
    budget: Budget | None
    recording: bool
    not_recorded: list[str]
    written: list[Written]
    errors: list[str]
    suite_regressed: list[tuple[str, Verdict]]

    @property
    def verdicts(self) -> list[Verdict]: ...

    def untouched(self) -> dict[Path, list[Any]]: ...


_UNTOUCHED_SHOWN = 20


def summary(tr: Any, gate: GateSession) -> None:
    """The verdict table, its counts and budget, suite-level regressions, values not recorded, baselines
    written, errors, and the entries this run left unchecked."""
    tr.write_sep("=", "llmbench verdicts")
    for line in table.render(gate.verdicts):
        tr.write_line(line)
    tr.write_line(table.summary(gate.verdicts), bold=True)
    for line in table.not_judged(gate.verdicts):
        tr.write_line(line)
    tr.write_line(budget_line(gate))
    if gate.recording and any(v.status == "REGRESSED" for v in gate.verdicts):
        tr.write_line(
            "recording (--update-baselines=all): the REGRESSED rows are shown and recorded, and fail "
            "nothing; judge a change with a plain run, or accept nightlies with =accept"
        )
    for nodeid, v in gate.suite_regressed:
        tr.write_line(
            f"REGRESSED at suite level (test {nodeid} passed; Holm across the {v.family} family): {v.message()}",
            red=not v.recorded,
        )
    if gate.not_recorded:
        tr.write_line(f"{len(gate.not_recorded)} value(s) not recorded (measured on a busy host):")
        for line in gate.not_recorded[:_UNTOUCHED_SHOWN]:
            tr.write_line(f"  {line}")
    for w in gate.written:
        values = f", {w.values} values" if w.values > w.entries else ""
        tr.write_line(f"baselines written: {_rel(w.path, gate.config)} ({w.entries} entries{values})")
        if w.regressed:
            tr.write_line(
                f"  {len(w.regressed)} REGRESSED value(s) written as the new baseline (history "
                f"restarted; the run fails so the change is reviewed): {', '.join(w.regressed)}",
                red=True,
            )
    for err in gate.errors:
        tr.write_line(f"ERROR {err}", red=True)
    _untouched(tr, gate)


def budget_line(gate: GateSession) -> str:
    if gate.budget is None:
        return "error budget off (each gate at its own level)"
    judged = {f: sum(v.family == f and v.p_value is not None for v in gate.verdicts) for f in FAMILIES}
    compared = gate.budget.compared  # the session's comparisons share each family's alpha (gate/budget.py)
    parts = [
        f"{f} α={gate.budget.alphas[f]:g} over {judged[f]} gates"
        + (f" + {compared[f]} comparisons" if compared[f] else "")
        for f in FAMILIES
        if judged[f]
    ]
    return (
        "error budget: "
        + (", ".join(parts) if parts else "no gate with a p-value")
        + " (Holm per family; a test fails at p ≤ α/gates counted up front)"
    )


def _untouched(tr: Any, gate: GateSession) -> None:
    untouched = gate.untouched()
    total = sum(len(k) for k in untouched.values())
    if not total:
        return
    tr.write_line(f"{total} baseline entries were not checked in this run (kept):")
    shown = 0
    for path, keys in untouched.items():
        for runner, test, metric in keys:
            if shown == _UNTOUCHED_SHOWN:
                break
            where = f"runners/{runner}" if runner else "shared"
            tr.write_line(f"  {_rel(path, gate.config)}: {where} {test} {metric}")
            shown += 1
    if total > shown:
        tr.write_line(f"  … and {total - shown} more")


def _rel(path: Path, config: pytest.Config) -> str:
    try:
        return str(path.relative_to(config.invocation_params.dir))
    except ValueError:
        return str(path)
