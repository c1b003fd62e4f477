"""Accept length per request on real prompt sets: mean and standard error, by set and by group.

Why: the benchmark posts can only tell drafters apart when the gap exceeds about 2 SE of the per-prompt accept
lengths, so the unit of measurement is the request (one user turn), not the server's running average.
Multi-turn prompts (MT-Bench, SPEED-Bench) are played turn by turn with the model's own answers, and
each turn is one observation. Natural stops only: nothing here sets ``ignore_eos``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_llmbench.datasets.prompt import Prompt
from pytest_llmbench.evals.protocols import get_protocol
from pytest_llmbench.metrics import mean_se

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer
    from pytest_llmbench.workload.records import RequestRecord


@dataclass(frozen=True)
class Summary:
    """Mean, standard error of the mean (scipy.stats.sem, ddof=1) and n."""

    mean: float
    se: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        return cls(*mean_se(values))

    def as_dict(self) -> dict[str, Any]:
        return {"mean": _num(self.mean), "se": _num(self.se), "n": self.n}

    def __str__(self) -> str:
        return f"{self.mean:.3f} ± {self.se:.3f} (n={self.n})"


def _num(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), 6)


@dataclass
class TurnResult:
    """One request: user turn ``turn`` of ``prompt``."""

    prompt: Prompt
    turn: int
    record: RequestRecord

    @property
    def accept_length(self) -> float | None:
        spec = self.record.spec
        return spec.accept_length if self.record.ok and spec is not None else None


def run_turns(
    server: LLMServer,
    prompts: Sequence[Prompt],
    body: Mapping[str, Any],
    *,
    concurrency: int = 1,
    max_turns: int | None = None,
    on_done: Callable[[RequestRecord], None] | None = None,
    run: Callable[..., list[RequestRecord]] | None = None,
) -> list[TurnResult]:
    """Send every turn of every prompt; turn i+1 carries the model's answer to turn i.

    Turns are sent in rounds (all first turns, then all second turns…) so ``concurrency`` applies
    within a round; a prompt whose earlier turn failed stops there.
    """
    if run is None:
        from pytest_llmbench.workload.requests import run_requests

        run = run_requests
    results: list[TurnResult] = []
    answers: dict[int, list[str]] = {i: [] for i in range(len(prompts))}
    alive = list(range(len(prompts)))
    turn = 0
    while alive:
        todo = [i for i in alive if turn < len(prompts[i].turns) and (max_turns is None or turn < max_turns)]
        if not todo:
            break
        bodies = [{**body, "messages": prompts[i].messages(turn, answers[i])} for i in todo]
        records = run(server, bodies, concurrency=concurrency, on_done=on_done)
        alive = []
        for i, rec in zip(todo, records, strict=True):
            results.append(TurnResult(prompts[i], turn, rec))
            if rec.ok:
                answers[i].append(rec.text)
                alive.append(i)
        turn += 1
    return results


@dataclass
class AcceptLengthResult:
    """Per-request accept lengths of one set under one protocol."""

    set: str
    protocol: str
    turns: list[TurnResult] = field(default_factory=list)
    seed: int | None = None  # the requests' sampling seed: part of each case id

    @property
    def values(self) -> list[float]:
        """Accept length of every request that reported one (the gate's per-sample values)."""
        return [t.accept_length for t in self.turns if t.accept_length is not None]

    def by_case(self) -> dict[str, float]:
        """``{"<prompt id>#<turn>@seed<seed>": accept length}``: the cases a paired gate (PairedT) pairs on;
        another seed or prompt is another case, so a changed protocol falls back to the unpaired rule."""
        suffix = "" if self.seed is None else f"@seed{self.seed}"
        return {f"{t.prompt.id}#{t.turn}{suffix}": t.accept_length for t in self.turns if t.accept_length is not None}

    @property
    def failed(self) -> int:
        return sum(1 for t in self.turns if not t.record.ok)

    @property
    def without_spec(self) -> int:
        """Successful requests that carried no speculative stats (no drafting, or a 1-token answer)."""
        return sum(1 for t in self.turns if t.record.ok and t.accept_length is None)

    @property
    def errors(self) -> list[str]:
        return [f"{t.prompt.id}#{t.turn}: {t.record.error}" for t in self.turns if not t.record.ok]

    def summary(self) -> Summary:
        return Summary.of(self.values)

    def median_tpot_ms(self) -> float | None:
        """Median time per output token over the requests (the Swift post's "4.49 vs 4.47 ms" on SPEED-Bench)."""
        tpots = [t.record.tpot_s for t in self.turns if t.record.tpot_s is not None]
        return float(np.median(tpots)) * 1000.0 if tpots else None

    def by(self, key: str) -> dict[Any, Summary]:
        """Summaries per value of ``prompt.group[key]`` (SPEED-Bench domain or length)."""
        groups: dict[Any, list[float]] = defaultdict(list)
        for t in self.turns:
            if t.accept_length is not None and key in t.prompt.group:
                groups[t.prompt.group[key]].append(t.accept_length)
        return {g: Summary.of(v) for g, v in sorted(groups.items(), key=lambda kv: str(kv[0]))}

    def as_dict(self, group_keys: Sequence[str] = ()) -> dict[str, Any]:
        out: dict[str, Any] = {
            "set": self.set,
            "protocol": self.protocol,
            "accept_length": self.summary().as_dict(),
            "requests": len(self.turns),
            "failed": self.failed,
            "without_spec": self.without_spec,
            "per_request": [
                {
                    "id": t.prompt.id,
                    "turn": t.turn,
                    "accept_length": _num(t.accept_length),
                    "completion_tokens": t.record.completion_tokens,
                    "finish_reason": t.record.finish_reason,
                }
                for t in self.turns
            ],
        }
        for key in group_keys:
            out[f"by_{key}"] = {str(g): s.as_dict() for g, s in self.by(key).items()}
        return out


def run_accept_length(
    server: LLMServer,
    prompts: Sequence[Prompt],
    protocol: str = "dflash2-card",
    *,
    set_name: str | None = None,
    concurrency: int | None = None,
    max_turns: int | None = None,
    on_done: Callable[[RequestRecord], None] | None = None,
    run: Callable[..., list[RequestRecord]] | None = None,
    **overrides: Any,
) -> AcceptLengthResult:
    """Run ``prompts`` under ``protocol`` (request-field ``overrides`` win) and collect accept lengths."""
    proto = get_protocol(protocol)
    body = proto.request_body(**overrides)
    turns = run_turns(
        server, prompts, body, concurrency=concurrency or proto.users, max_turns=max_turns, on_done=on_done, run=run
    )
    name = set_name or (prompts[0].set if prompts else "")
    return AcceptLengthResult(set=name, protocol=protocol, turns=turns, seed=body.get("seed"))
