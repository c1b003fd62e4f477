"""What a comparison session says on the terminal: lines as they happen, and the table at the end.

Why apart from the session plugin: the wording is read by people and by the tests that pin it; the session
decides when to speak, this module what is said.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from pytest_llmbench.compare import table
from pytest_llmbench.tell import tell


def say(config: pytest.Config, line: str) -> None:
    """A line on the terminal now (the plan table, the pilot's plan, progress), not only in the table at the
    end; a session without a terminal (an xdist worker) keeps it for the table."""
    if config.pluginmanager.get_plugin("terminalreporter") is not None:
        tell(config, line, yellow=True)


def collection_lines(pairs: Iterable[Any], settings: Any, alphas: Mapping[str, float]) -> list[str]:
    """After collection: each compared config's arms, and the design, block size and alphas."""
    pairs = list(pairs)
    lines = [f"llmbench compare: {p.describe()}" for p in pairs]
    if pairs:
        design = settings.design.describe(settings.server_mode != "per-block", settings.session_budget_s)
        per = ", ".join(f"{f}={a:.3g}" for f, a in alphas.items())
        lines.append(f"llmbench compare: {design}, {settings.block_prompts} prompts per block; per-comparison α {per}")
        if settings.sets is not None:
            a, b = (",".join(x) for x in settings.sets)
            what = "CPU cores, each server pinned" if settings.device_kind == "cpu" else "GPUs"
            lines.append(
                f"llmbench compare: placement {settings.server_mode}: the arms on {what} {a} | {b}, swapped between "
                "the two halves of every unit (the set effect cancels; its estimate is shown per scenario)"
            )
    return lines


def message(r: Mapping[str, Any]) -> str:
    """One comparison record in a line: the test's failure text and the suite-level note."""
    return (
        f"{r['config']} {r.get('test_key')} {r['metric']}: {r['verdict']} — "
        f"candidate/reference {table.estimate(r)}, {table.sizes_text(r)}, p={table.num(r.get('p_value'))}; "
        f"{table.reach(r)}; {r.get('method')} ({r.get('rounds')} rounds, {r.get('prompts')} prompts)"
    )


def summary(
    tr: Any,
    rows: list[dict[str, Any]],
    starts: list[dict[str, Any]],
    retries: Iterable[Mapping[str, Any]],
    *,
    blocks: Sequence[Mapping[str, Any]] = (),
    made: Counter[str],
    counted: Counter[str],
    budgeted: bool,
) -> None:
    """The session's comparison table: rows after Holm, the arms' starts, retried starts, a family that made
    more comparisons than were counted up front (``budgeted``: its alpha was split by that count), each
    regression found at suite level only, and after a regressed comparison what moved between the arms in its
    ``blocks``' telemetry (the first question a reader asks: why is it slower)."""
    tr.write_sep("=", "llmbench comparisons (reference vs candidate, interleaved)")
    for line in table.render(rows):
        tr.write_line(line)
    if rows:
        tr.write_line(table.counts(rows))
    for line in table.arms_lines(starts):
        tr.write_line(line)
    for r in retries:
        tr.write_line(
            f"{r.get('config')}: {r.get('role')} arm ({r.get('label')}) failed to start once and was started "
            "again (the units already played were kept)",
            yellow=True,
        )
    for fam, n in sorted(made.items()):
        if n > counted[fam] and budgeted:
            tr.write_line(
                f"llmbench compare: {n} {fam} comparisons made, {counted[fam]} counted up front (a check "
                f"whose metric is not a literal, or in a loop): each test judged at the family's alpha / "
                f"{counted[fam]}; Holm above holds the family's budget over all {n}",
                yellow=True,
            )
    for r in rows:
        if r.get("suite_verdict") == "regressed":
            tr.write_line(
                f"REGRESSED at suite level (test {r['nodeid']} passed; Holm q={r['q_value']:.3g}): {message(r)}",
                red=True,
            )
    for line in table.what_changed_lines([*rows, *blocks]):
        tr.write_line(line)
