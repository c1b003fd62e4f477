"""The suite's error budget across comparisons: Holm per family, as the gate does for its checks.

A test fails on a comparison that regressed at its own level (the family's alpha over the
comparisons counted up front, Bonferroni, known before any test runs). At session end every
comparison's p-value gets Holm's adjusted q within its family; one whose q reaches alpha only in
Holm's later steps is regressed at suite level, and the session fails although its test passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_llmbench.gate.budget import holm


def adjust(records: Sequence[dict[str, Any]], alphas: Mapping[str, float] | None) -> list[dict[str, Any]]:
    """Records with ``q_value`` and ``suite_verdict`` added (a copy; order kept)."""
    out = [dict(r) for r in records]
    if alphas is None:
        return out
    for family, alpha in alphas.items():
        idx = [i for i, r in enumerate(out) if r.get("family") == family and isinstance(r.get("p_value"), (int, float))]
        for i, q in zip(idx, holm(out[i]["p_value"] for i in idx), strict=True):
            out[i]["q_value"] = q
            worse = _worse_beyond_ignore(out[i])
            if q <= alpha and worse and out[i].get("verdict") != "regressed":
                out[i]["suite_verdict"] = "regressed"
    return out


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
