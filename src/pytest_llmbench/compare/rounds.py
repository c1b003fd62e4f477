"""The data of one interleaved comparison: each arm's blocks, round by round, and the paired views the
statistics take of them.

Its own module so that the two sides that use it, running the rounds (interleave.py) and judging them
(judging.py), depend on it and not on each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_llmbench.metrics import scenario_metrics
from pytest_llmbench.workload.records import RequestRecord
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult


@dataclass
class Block:
    """One arm's run of one round's prompts; warm-up rounds have negative numbers and are never judged."""

    round: int
    role: str
    result: ScenarioResult
    prompt_ids: Sequence[int] = ()  # the scenario's prompt of each request index (default: the index)
    started_first: str | None = None  # whose server started first for this block's pair (None: not restarted)
    unit: int | None = None  # the unit (server pair, or round) it counts in; None for a warm-up block
    wall_s: float | None = None  # the block's wall seconds, its flush included (what a plan's round costs)
    devices: tuple[str, ...] | None = None  # the set its server ran on (disjoint placements), else None

    @property
    def warmup(self) -> bool:
        return self.round < 0

    def prompt_of(self, index: int) -> int:
        return self.prompt_ids[index] if index < len(self.prompt_ids) else index


@dataclass
class Rounds:
    """Every block of one scenario's comparison, and the paired views the statistics need, per unit:
    ``unit_rounds`` consecutive rounds on one pair of server starts (1: the round is the unit)."""

    scenario: Scenario
    blocks: list[Block] = field(default_factory=list)
    unit_rounds: int = 1

    def add(self, block: Block) -> None:
        self.blocks.append(block)

    def unit_of(self, round_index: int) -> int:
        return round_index // self.unit_rounds

    @property
    def unit_name(self) -> str:
        return "rounds" if self.unit_rounds == 1 else "server pairs"

    def _by_round(self, role: str) -> dict[int, Block]:
        return {b.round: b for b in self.blocks if b.role == role}

    @property
    def complete(self) -> list[int]:
        """Judged rounds (not warm-up) in which both arms ran."""
        ref, cand = self._by_round("reference"), self._by_round("candidate")
        return sorted(r for r in set(ref) & set(cand) if r >= 0)

    def upto(self, rounds: int) -> Rounds:
        """The first ``rounds`` judged rounds (a pilot's view)."""
        return Rounds(self.scenario, [b for b in self.blocks if 0 <= b.round < rounds], self.unit_rounds)

    def round_values(self, metric: str) -> tuple[list[float], list[float]]:
        """One value per unit per arm (e.g. output tok/s of each block), paired by unit: a unit of several
        rounds gives each arm's geometric mean over them, so the log ratio of the two is the mean of the
        rounds' log ratios."""
        ref, cand = self._by_round("reference"), self._by_round("candidate")
        units: dict[int, list[tuple[float, float]]] = {}
        for r in self.complete:
            a, b = censored_value(ref[r].result.metrics, metric), censored_value(cand[r].result.metrics, metric)
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                units.setdefault(self.unit_of(r), []).append((float(a), float(b)))
        pairs = [(_gmean([a for a, _ in v]), _gmean([b for _, b in v])) for v in units.values()]
        return [a for a, _ in pairs], [b for _, b in pairs]

    def censored(self, metric: str) -> int:
        """Blocks whose ``metric`` was below what their search could measure (``CENSORED_AT``)."""
        complete = set(self.complete)
        return sum(
            1
            for b in self.blocks
            if b.round in complete and censored_value(b.result.metrics, metric) != b.result.metrics.get(metric)
        )

    def request_values(
        self, value: Callable[[RequestRecord], float | None]
    ) -> tuple[list[float], list[float], list[tuple[int, int]]]:
        """One value per prompt per arm, paired by (round, prompt), and each pair's (round, scenario prompt);
        a pair with a failed side is dropped."""
        ref, cand = self._by_round("reference"), self._by_round("candidate")
        out_ref: list[float] = []
        out_cand: list[float] = []
        out_round: list[tuple[int, int]] = []
        for r in self.complete:
            a = {rec.index: rec for rec in ref[r].result.records}
            b = {rec.index: rec for rec in cand[r].result.records}
            for i in sorted(set(a) & set(b)):
                va = value(a[i]) if a[i].ok else None
                vb = value(b[i]) if b[i].ok else None
                if va is not None and vb is not None:
                    out_ref.append(float(va))
                    out_cand.append(float(vb))
                    out_round.append((r, ref[r].prompt_of(i)))
        return out_ref, out_cand, out_round

    def prompts_used(self) -> int:
        """Requests sent across both arms, warm-up rounds included (warmup requests not counted)."""
        return sum(len(b.result.records) for b in self.blocks)

    def merged(self, role: str) -> ScenarioResult:
        """One arm's judged blocks as one result: every request (renumbered), metrics over the summed
        duration."""
        blocks = [b for b in self.blocks if b.role == role and not b.warmup]
        records: list[RequestRecord] = []
        for b in blocks:
            for rec in b.result.records:
                records.append(_renumbered(rec, len(records)))
        duration = sum(float(b.result.metrics.get("duration") or 0.0) for b in blocks)
        notes = [f"round {b.round}: {n}" for b in blocks for n in b.result.notes]
        info = blocks[-1].result.server_info if blocks else {}
        metrics: dict[str, Any] = {**scenario_metrics(records, duration)} if records and duration > 0 else {}
        metrics["rounds"] = len(blocks)
        return ScenarioResult(self.scenario, records, metrics, notes, info)


#: A round metric that can fall below what its block could measure, and the block's metric bounding it there.
#: A capacity search that passed no rate has capacity 0 (capacity/search.py): the truth is below its lowest
#: failed rate, so a comparison judges the block at that rate, an upper bound. A round where both arms were
#: censored then counts as no change, one where only one was understates the change: toward "no change",
#: never past it (and 0 would leave the log ratio undefined: the session stopped on a ValueError).
CENSORED_AT = {"capacity_rps": "capacity_failed_rps"}


def censored_value(metrics: Any, metric: str) -> Any:
    """``metrics[metric]``, or its bound where the block censored it (``CENSORED_AT``)."""
    value, bound = metrics.get(metric), CENSORED_AT.get(metric)
    if bound and value == 0 and isinstance(metrics.get(bound), (int, float)) and metrics[bound] > 0:
        return float(metrics[bound])
    return value


def _gmean(values: list[float]) -> float:
    """The geometric mean; a non-positive value passes through (the ratio test then names it)."""
    if len(values) == 1 or min(values) <= 0:
        return min(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _renumbered(rec: RequestRecord, index: int) -> RequestRecord:
    return replace(rec, index=index)
