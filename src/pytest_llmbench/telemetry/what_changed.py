"""What changed between the arms of a comparison: each telemetry quantity, reference against candidate.

A REGRESSED TTFT says *that*; the blocks' timelines (``comparison_block`` records: the server's /metrics
summary, the per-request prefix-cache hit rate, the GPUs' readings, the host's load) say *why*. Each
block is one value per quantity (its window's mean for gauges and rates, its increase for counters), so
an arm has one value per played block. Per quantity the table gives both arms' means, the difference
(candidate − reference) with its 95% Welch interval (scipy), and the **standardized difference**: the
difference over the pooled within-arm SD of the blocks (Cohen's d), where that SD is floored at 1% of the
two arms' mean level, so a quantity that is constant within each arm (a deterministic token count, a hit
rate of exactly 0) is not infinitely far apart but ``200·|c − r| / (|c| + |r|)``: at most 200, reached
when one arm is exactly zero. Rows are ranked by the absolute standardized difference, largest first.

Pure: plain records in, plain rows out, so the terminal (compare/session.py), summary.md and report.html
(report/what_changed.py) and a results folder read afterwards all rank the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
LEVEL_FLOOR = 0.01  # the pooled SD is at least this share of the arms' mean level (see the module doc)
TOP = 8  # rows shown by default (the terminal, summary.md)
SKIP_SUFFIXES = ("_max",)  # a window's maximum repeats its mean's story; the records keep it

#: block fields read beside the /metrics summary: label → (path in the record, what it is)
EXTRA: Mapping[str, tuple[tuple[str, ...], str]] = {
    "prefix_cache_hit_rate": (("metrics", "prefix_cache_hit_rate"), "per-request cached/prompt tokens"),
    "host.others_cores": (("host_load", "others"), "other processes' CPU, cores"),
    "host.steal_cores": (("host_load", "steal"), "VM steal, cores"),
}


@dataclass(frozen=True)
class Change:
    """One quantity, reference against candidate, over the played (non-warm-up) blocks."""

    quantity: str
    reference: float
    candidate: float
    difference: float  # candidate − reference
    low: float | None  # 95% Welch interval of the difference (None: fewer than 2 blocks an arm)
    high: float | None
    standardized: float  # difference / max(pooled SD, LEVEL_FLOOR · mean level); 0 when both are 0
    n_reference: int
    n_candidate: int

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class WhatChanged:
    """The ranked changes of one compared scenario, with the comparisons' verdicts and the busy blocks."""

    compare_session: str
    config: str
    nodeid: str
    scenario: str
    verdicts: Mapping[str, str]  # metric → verdict (the suite verdict where Holm was applied)
    changes: list[Change]
    busy: list[str] = field(default_factory=list)  # "round 3 candidate: other processes used …"

    @property
    def regressed(self) -> list[str]:
        return sorted(m for m, v in self.verdicts.items() if v == "regressed")

    def title(self) -> str:
        worst = f"REGRESSED {', '.join(self.regressed)}" if self.regressed else "not regressed"
        return f"what changed: {self.config} {self.scenario} ({worst}; candidate vs reference, per block)"


def _get(record: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = record
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def block_values(block: Mapping[str, Any]) -> dict[str, float]:
    """One value per quantity of one block: its /metrics (and GPU) summary and the ``EXTRA`` fields."""
    out: dict[str, float] = {}
    summary = _get(block, ("telemetry", "summary")) or {}
    for name, value in summary.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not name.endswith(SKIP_SUFFIXES):
            out[name] = float(value)
    for label, (path, _) in EXTRA.items():
        value = _get(block, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[label] = float(value)
    return {k: v for k, v in out.items() if math.isfinite(v)}


def change(quantity: str, reference: Sequence[float], candidate: Sequence[float]) -> Change:
    """Both arms' blocks of one quantity compared: means, Welch interval, standardized difference."""
    r, c = np.asarray(reference, float), np.asarray(candidate, float)
    diff = float(c.mean() - r.mean())
    low = high = None
    if len(r) >= 2 and len(c) >= 2:
        if r.std() == 0 and c.std() == 0:  # no spread in either arm: the difference is exact
            low = high = diff
        else:
            ci = stats.ttest_ind(c, r, equal_var=False).confidence_interval(CONFIDENCE)
            low, high = float(ci.low), float(ci.high)
    dof = len(r) + len(c) - 2
    pooled = 0.0
    if dof > 0:
        pooled = math.sqrt(
            (
                (len(r) - 1) * (r.var(ddof=1) if len(r) > 1 else 0.0)
                + (len(c) - 1) * (c.var(ddof=1) if len(c) > 1 else 0.0)
            )
            / dof
        )
    scale = max(pooled, LEVEL_FLOOR * (abs(float(r.mean())) + abs(float(c.mean()))) / 2)
    std = diff / scale if scale > 0 else 0.0
    return Change(quantity, float(r.mean()), float(c.mean()), diff, low, high, std, len(r), len(c))


def rank(blocks: Iterable[Mapping[str, Any]]) -> list[Change]:
    """The quantities both arms have, ranked by |standardized difference| (largest first, then by name)."""
    per: dict[str, dict[str, list[float]]] = {"reference": {}, "candidate": {}}
    for b in blocks:
        if b.get("warmup") or b.get("role") not in per:
            continue
        for q, v in block_values(b).items():
            per[str(b["role"])].setdefault(q, []).append(v)
    both = sorted(set(per["reference"]) & set(per["candidate"]))
    changes = [change(q, per["reference"][q], per["candidate"][q]) for q in both]
    return sorted(changes, key=lambda ch: (-abs(ch.standardized), ch.quantity))


def _busy(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    out = []
    for b in blocks:
        load = b.get("host_load") or {}
        if load.get("contended"):
            who = ", ".join(f"{n} {100 * c:.0f}%" for n, c in (load.get("top") or [])[:3])
            out.append(
                f"round {b.get('round')} {b.get('role')}: other processes used {load.get('others', 0):.2f} of "
                f"{load.get('cores')} cores" + (f" ({who})" if who else "")
            )
    return out


def from_records(records: Iterable[Mapping[str, Any]]) -> list[WhatChanged]:
    """One :class:`WhatChanged` per compared scenario (session, nodeid, scenario) that has blocks of both
    arms; regressed scenarios first. ``comparison`` records give the verdicts (their ``suite_verdict``
    where a report joined Holm's step onto them)."""
    blocks: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    verdicts: dict[tuple[str, str, str], dict[str, str]] = {}
    configs: dict[tuple[str, str, str], str] = {}
    for r in records:
        key = (str(r.get("compare_session")), str(r.get("nodeid")), str(r.get("scenario")))
        if r.get("record") == "comparison_block":
            blocks.setdefault(key, []).append(r)
            configs.setdefault(key, str(r.get("config")))
        elif r.get("record") == "comparison" and r.get("metric"):
            verdicts.setdefault(key, {})[str(r["metric"])] = str(r.get("suite_verdict") or r.get("verdict"))
    out = []
    for key, bs in blocks.items():
        changes = rank(bs)
        if changes:
            out.append(WhatChanged(key[0], configs[key], key[1], key[2], verdicts.get(key, {}), changes, _busy(bs)))
    return sorted(out, key=lambda w: (not w.regressed, w.config, w.scenario))


def _num(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


HEADER = ["rank", "quantity", "reference", "candidate", "cand − ref [95% CI]", "std. diff", "blocks"]


def rows(w: WhatChanged, top: int | None = TOP) -> list[list[str]]:
    """The table's rows as display strings (``HEADER``), the ``top`` largest moves."""
    out = []
    for i, ch in enumerate(w.changes[:top] if top else w.changes, 1):
        ci = "" if ch.low is None else f" [{_num(ch.low)}, {_num(ch.high)}]"
        out.append(
            [
                str(i),
                ch.quantity,
                _num(ch.reference),
                _num(ch.candidate),
                f"{ch.difference:+.4g}{ci}",
                f"{ch.standardized:+.1f}",
                f"{ch.n_reference}+{ch.n_candidate}",
            ]
        )
    return out


NOTE = (
    "Each block is one value per quantity (/metrics window mean, counter increase as <name>_total, per-request "
    "cache hit rate, host load); ranked by |std. diff| = |cand − ref| over the pooled within-arm SD of the "
    "blocks, floored at 1% of the arms' mean level (so at most 200 when one arm is exactly 0); interval: Welch."
)
