"""Per-case checks measured on both arms (``bench.arms()``): which paired test judges them.

Why its own module: the choice (exact McNemar for pass/fail, the clustered paired test for decisions, the
paired t otherwise) is statistics dispatch with no pytest in it; the session only records the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_llmbench.compare.judging import family_of, source_of
from pytest_llmbench.compare.margins import Sizes
from pytest_llmbench.compare.stats import Comparison, compare_decisions, compare_paired, compare_pass_fail


def family_for(noise: Any, family: str | None) -> str:
    """The family a per-case check counts in: given, else decisions for ``PairedBootstrap``, else quality."""
    return family or ("decisions" if type(noise).__name__ == "PairedBootstrap" else "quality")


def judge_cases(
    metric: str,
    cases: Mapping[str, float],
    reference_cases: Mapping[str, float],
    *,
    noise: Any,
    direction: str | None,
    sizes: Sizes,
    alpha: float,
) -> tuple[Comparison, int]:
    """The comparison of the cases both arms measured, and how many; a ValueError names the check when no
    case id is common or the test refuses the data."""
    common = sorted(set(cases) & set(reference_cases))
    if not common:
        raise ValueError(
            f"bench.check({metric!r}, reference_cases=...): no case id measured on both arms "
            f"({len(reference_cases)} reference, {len(cases)} candidate)"
        )
    ref = [float(reference_cases[k]) for k in common]
    cand = [float(cases[k]) for k in common]
    higher = direction != "lower"
    name = type(noise).__name__
    if name == "McNemar":
        return compare_pass_fail(metric, ref, cand, sizes=sizes, alpha=alpha), len(common)
    if name == "PairedBootstrap":
        sep = getattr(noise, "cluster", "")  # a case's questions are resampled together
        clusters = [k.split(sep, 1)[0] for k in common] if sep else None
        c = compare_decisions(metric, ref, cand, higher_is_better=higher, sizes=sizes, alpha=alpha, clusters=clusters)
        return c, len(common)
    return compare_paired(metric, ref, cand, higher_is_better=higher, sizes=sizes, alpha=alpha), len(common)


def check_sizes(metric: str, settings: Any, detect: object, ignore: object) -> dict[str, dict[str, object]]:
    """The override tables for one check: the ini's, with ``bench.check``'s own sizes of ``metric`` on top."""
    d: dict[str, object] = dict(settings.detect)
    i: dict[str, object] = dict(settings.ignore)
    if detect is not None:
        d[metric] = detect
    if ignore is not None:
        i[metric] = ignore
    return {"detect": d, "ignore": i}


def compared_family(metric: str) -> str | None:
    """The family a ``bench.check(metric)`` counts in when it becomes a comparison (a serving metric), or
    None (it keeps its stored baseline)."""
    return family_of(metric) if source_of(metric) is not None else None
