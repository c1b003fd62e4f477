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

from pytest_llmbench.gate.budget import FAMILIES, holm


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


def adjust(records: Sequence[dict[str, Any]], alphas: Mapping[str, float] | None) -> list[dict[str, Any]]:
    """Records with ``q_value`` and ``suite_verdict`` added (a copy; order kept)."""
    out = [dict(r) for r in records]
    families = sorted({str(r.get("family")) for r in out})
    for family in families:
        alpha = alphas.get(family) if alphas is not None else None
        idx = [i for i, r in enumerate(out) if r.get("family") == family and isinstance(r.get("p_value"), (int, float))]
        for i, q in zip(idx, holm(out[i]["p_value"] for i in idx), strict=True):
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
