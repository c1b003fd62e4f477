"""Why a comparison's verdict is what it is, in a few words, for every place a verdict is shown.

"inconclusive" alone reads as a fault; the record already says what kept it from either side (its
``stop``, ``method``, plan and margins), so each table row and forest-plot row says so next to the verdict.
The rules are compare/stats.py's: regressed/improved when the interval clears ± ignore, equivalent
when it lies inside ± detect, inconclusive otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_llmbench.compare.stats import TOO_FEW


def size(rec: Mapping[str, Any], x: Any) -> str:
    """``±1%`` for a ratio's size, ``±0.02`` for a difference's."""
    if not isinstance(x, (int, float)) or x != x:
        return "?"
    return f"±{100 * x:.3g}%" if rec.get("kind") == "ratio" else f"±{x:.3g}"


def _band(rec: Mapping[str, Any], key: str) -> str:
    """``±1% (ignore)``; ``± ignore`` for a record that does not carry its size."""
    x = rec.get(key)
    return f"{size(rec, x)} ({key})" if isinstance(x, (int, float)) and x == x else f"± {key}"


def margins(rec: Mapping[str, Any]) -> str:
    """``ignore ±1%, detect ±3%``."""
    return f"ignore {size(rec, rec.get('ignore'))}, detect {size(rec, rec.get('detect'))}"


def cause(rec: Mapping[str, Any], *, detail: bool = True) -> str | None:
    """What stopped an inconclusive comparison short of a verdict, or None when it simply ran its plan;
    without ``detail`` the words only (a table gives the numbers once per scenario, in its note)."""
    method, stop = str(rec.get("method") or ""), str(rec.get("stop") or "")
    if stop == "interrupted":
        return "interrupted"
    if TOO_FEW in method or stop == "too-small":
        return TOO_FEW
    if not all(isinstance(rec.get(k), (int, float)) and math.isfinite(rec[k]) for k in ("ci_low", "ci_high")):
        return f"not judged ({method})" if method else "not judged"
    if rec.get("underpowered"):
        needed, planned = rec.get("needed_rounds"), rec.get("planned_rounds") or rec.get("rounds")
        return f"underpowered (needs ~{needed} rounds, budget {planned})" if needed and detail else "underpowered"
    if stop == "budget":
        return "budget spent"
    return None


def reason(rec: Mapping[str, Any], *, detail: bool = False) -> str:
    """One short line: the rule the verdict met, or for an inconclusive one what kept it from both."""
    verdict = str(rec.get("suite_verdict") or rec.get("verdict") or "").lower()
    ignore, detect = _band(rec, "ignore"), _band(rec, "detect")
    if verdict in ("regressed", "improved"):
        if str(rec.get("verdict")).lower() != verdict:  # raised by Holm over the family (compare/suite.py)
            return f"family q ≤ α and estimate beyond {ignore} (Holm)"
        return f"interval clear of {ignore}"
    if verdict == "equivalent":
        return f"interval inside {detect}"
    if verdict != "inconclusive":
        return "-"
    rule = f"interval not clear of {ignore}, not inside {detect}"
    found = cause(rec, detail=detail)
    if found is None:
        return rule
    if found == "interrupted" or found.startswith("not judged") or found == TOO_FEW:
        return found
    return f"{found}; {rule}"
