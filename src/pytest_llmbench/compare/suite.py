"""The suite's error budget across comparisons: Holm per family, as the gate does for its checks.

A test fails on a comparison that regressed at its own level (the family's alpha over the
comparisons counted up front, Bonferroni, known before any test runs). At session end every
comparison's p-value gets Holm's adjusted q within its family; one whose q reaches alpha only in
Holm's later steps is regressed at suite level, and the session fails although its test passed.
Without a family budget (no ``--gate-alpha``) q is still computed, for the reader; no suite verdict.

The comparison records are written as each test ends, before q exists, and results.jsonl only appends
(a line written is never rewritten: nothing is lost if the session dies). So q and the suite verdict go
into one ``comparison_suite`` record per comparison at session end, and a reader joins them
(records/verdict.py :func:`joined`): the latest suite record of the same session, test and metric wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_llmbench import stash
from pytest_llmbench.gate.budget import FAMILIES, Budget, PValues, holm


def family_alphas(
    per_comparison: float | None, counted: Mapping[str, int], budget: Mapping[str, float] | None
) -> dict[str, float] | None:
    """The alpha per family that Holm works at: the gate's budget (``--gate-alpha``), unless the user fixed
    one comparison's alpha (``--llmbench-compare-alpha P``): then P times the comparisons counted up front,
    the family rate P stands for, so the suite level never flags what the comparison's own alpha would not
    (with the budget instead, one comparison at P=0.001 failed its session at p=0.004)."""
    if per_comparison is not None:
        return {fam: per_comparison * max(counted.get(fam, 0), 1) for fam in FAMILIES}
    return dict(budget) if budget is not None else None


DEFAULT_ALPHA = 0.01  # one comparison, when the suite's budget is off


def comparison_alphas(
    per_comparison: float | None, budget: Mapping[str, float] | None, counted: Mapping[str, int], shared: Budget | None
) -> dict[str, float]:
    """Per-comparison alpha by family: given (``--llmbench-compare-alpha``); else the family's budget over
    everything counted in it up front — the comparisons (every serving ``bench.check`` of each compared test,
    compare/count.py) and, in the shared budget, the session's stored checks."""
    if per_comparison is not None:
        return dict.fromkeys(FAMILIES, per_comparison)
    if budget is None:
        return dict.fromkeys(FAMILIES, DEFAULT_ALPHA)
    if shared is not None:
        return {fam: shared.threshold(fam) for fam in FAMILIES}
    return {fam: budget[fam] / max(counted.get(fam, 0), 1) for fam in FAMILIES}


def join_gate_budget(
    config: pytest.Config, counted: Mapping[str, int] | None, items: list[pytest.Item] | None, p_values: PValues
) -> Budget | None:
    """The gate's error budget (gate/budget.py), which a session's comparisons join so that a family with
    stored checks and comparisons spends its alpha once: with ``counted``, the comparisons counted up front
    are added to the gates' count for every per-test level (the gate counts ``items`` first: the levels
    are needed before its own count runs), and ``p_values`` joins the family's one Holm pass. None
    without a budget (``--gate-alpha off``) or a gate."""
    gate = config.stash.get(stash.GATE, None)
    shared: Budget | None = getattr(gate, "budget", None)
    if shared is None or gate is None:
        return None
    if counted is not None and items is not None:
        gate.count_gates(items)
        shared.compared = {fam: int(counted.get(fam, 0)) for fam in FAMILIES}
        shared.sources["comparisons"] = p_values
    return shared


def p_values_by_family(records: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The comparisons' raw p-values per family (what the gate's Holm pass joins)."""
    out: dict[str, list[float]] = {}
    for r in records:
        if isinstance(r.get("p_value"), (int, float)):
            out.setdefault(str(r.get("family")), []).append(float(r["p_value"]))
    return out


def adjust(
    records: Sequence[dict[str, Any]],
    alphas: Mapping[str, float] | None,
    shared: Budget | None = None,
) -> list[dict[str, Any]]:
    """Records with ``q_value`` and ``suite_verdict`` added (a copy; order kept). With the ``shared``
    budget, each family's Holm pass holds the session's stored checks too (``Budget.joint_q``)."""
    out = [dict(r) for r in records]
    families = sorted({str(r.get("family")) for r in out})
    for family in families:
        alpha = alphas.get(family) if alphas is not None else None
        idx = [i for i, r in enumerate(out) if r.get("family") == family and isinstance(r.get("p_value"), (int, float))]
        p_values = [float(out[i]["p_value"]) for i in idx]
        qs = shared.joint_q(family, "comparisons", p_values) if shared is not None else holm(p_values)
        for i, q in zip(idx, qs, strict=True):
            out[i]["q_value"] = q
            worse = _worse_beyond_ignore(out[i])
            if alpha is not None and q <= alpha and worse and out[i].get("verdict") != "regressed":
                out[i]["suite_verdict"] = "regressed"
    return out


def suite_record(adjusted: Mapping[str, Any], session: str) -> dict[str, Any]:
    """The ``comparison_suite`` record of one adjusted comparison: its q and its verdict after Holm."""
    return {
        "record": "comparison_suite",
        "compare_session": session,
        "config": adjusted.get("config"),
        "nodeid": adjusted.get("nodeid"),
        "scenario": adjusted.get("scenario"),
        "metric": adjusted.get("metric"),
        "family": adjusted.get("family"),
        "q_value": adjusted.get("q_value"),
        "suite_verdict": adjusted.get("suite_verdict") or adjusted.get("verdict"),
        "regressed_at_suite_level": adjusted.get("suite_verdict") == "regressed",
    }


def _worse_beyond_ignore(r: Mapping[str, Any]) -> bool:
    """The point estimate itself is worse than the ignore size (a small q alone could come from a tight
    interval that still straddles it)."""
    margin = float(r.get("ignore") or 0.0)
    hib = bool(r.get("higher_is_better", True))
    if r.get("ratio") is not None:
        ratio = float(r["ratio"])
        return ratio < 1 - margin if hib else ratio > 1 + margin
    if r.get("difference") is not None:
        d = float(r["difference"])
        return d < -margin if hib else d > margin
    return False
