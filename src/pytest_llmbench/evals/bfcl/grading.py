"""Grading BFCL answers with bfcl's own checker, and running a set of cases against a server.

The wheel is installed with ``--no-deps``: its checker imports cleanly once
``bfcl_eval.constants.model_config`` (which imports every vendor SDK) is stubbed in ``sys.modules``;
``bfcl_eval.utils`` and ``eval_config`` are never imported (they create folders in site-packages).
Every case's pass/fail is kept, so a change shows which cases flipped.
"""

from __future__ import annotations

import sys
import types
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from pytest_llmbench.evals.bfcl.cases import Case
from pytest_llmbench.evals.bfcl.prompts import MODES, DecodeError, Mode, decode_qwen_fc, decode_tool_calls, request_body
from pytest_llmbench.evals.protocols import get_protocol

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer
    from pytest_llmbench.workload.records import RequestRecord

CHECKER_MODEL = "Qwen/Qwen3-32B-FC"


class _AnyModel:
    underscore_to_dot = False


class _ModelMapping(dict):
    def __missing__(self, key: str) -> _AnyModel:
        return _AnyModel()


@cache
def checker() -> tuple[Callable[..., dict[str, Any]], Any]:
    """bfcl's ``ast_checker`` and its ``Language`` enum, imported without the vendor SDKs."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.__doc__ = "stub installed by pytest-llmbench: the real module imports every vendor SDK"
        stub.MODEL_CONFIG_MAPPING = _ModelMapping()  # type: ignore[attr-defined]
        sys.modules[name] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language


@dataclass(frozen=True)
class Verdict:
    id: str
    category: str
    passed: bool
    error: str = ""
    calls: tuple[Mapping[str, Any], ...] = ()
    latency_s: float | None = None


def grade(
    case: Case,
    calls: Sequence[Mapping[str, Any]] | None,
    decode_error: str | None = None,
    latency_s: float | None = None,
) -> Verdict:
    """BFCL's verdict: irrelevance passes without a call, relevance with any, the rest by ast_checker."""
    calls = list(calls or [])
    made_call = decode_error is None and any(len(c) == 1 and next(iter(c.values())) is not None for c in calls)
    v: dict[str, Any] = dict(id=case.id, category=case.category, calls=tuple(calls), latency_s=latency_s)
    if case.expects_no_call:
        return Verdict(passed=not made_call, error="" if not made_call else "made a call where none fits", **v)
    if case.expects_any_call:
        return Verdict(passed=made_call, error="" if made_call else "made no call", **v)
    if decode_error is not None:
        return Verdict(passed=False, error=f"decode failed: {decode_error}", **v)
    ast_checker, language = checker()
    try:
        result = ast_checker(
            list(case.functions), calls, list(case.ground_truth or ()), language.PYTHON, case.category, CHECKER_MODEL
        )
    except Exception as e:  # the checker assumes well-formed values; odd ones fail the case, not the run
        return Verdict(passed=False, error=f"checker raised {type(e).__name__}: {e}"[:300], **v)
    if result.get("valid"):
        return Verdict(passed=True, **v)
    errors = result.get("error") or []
    return Verdict(passed=False, error="; ".join(map(str, errors))[:300] or result.get("error_type", "invalid"), **v)


def grade_record(case: Case, rec: RequestRecord, mode: Mode) -> Verdict:
    """Decode one response in ``mode`` and grade it; a failed request fails the case."""
    if not rec.ok:
        return Verdict(case.id, case.category, False, f"request failed: {rec.error}", latency_s=rec.e2e_s)
    try:
        calls = decode_tool_calls(rec.tool_calls, case.functions) if mode == "tools" else decode_qwen_fc(rec.text)
    except DecodeError as e:
        return grade(case, None, str(e), latency_s=rec.e2e_s)
    return grade(case, calls, latency_s=rec.e2e_s)


@dataclass
class BFCLResult:
    mode: str
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(v.passed for v in self.verdicts)

    @property
    def total(self) -> int:
        return len(self.verdicts)

    def per_category(self) -> dict[str, tuple[int, int]]:
        """{category: (passed, total)}."""
        tot, ok = Counter(v.category for v in self.verdicts), Counter(v.category for v in self.verdicts if v.passed)
        return {c: (ok[c], tot[c]) for c in tot}

    def mean_latency_s(self) -> float | None:
        lat = [v.latency_s for v in self.verdicts if v.latency_s is not None]
        return sum(lat) / len(lat) if lat else None

    def by_case(self) -> dict[str, float]:
        """{case id: 1.0 pass / 0.0 fail}: the cases a McNemar gate pairs on."""
        return {v.id: float(v.passed) for v in self.verdicts}

    def pass_fail(self) -> dict[str, str]:
        """{case id: 'pass'|'fail'} sorted by id, for a snapshot that shows flipped cases."""
        return {v.id: "pass" if v.passed else "fail" for v in sorted(self.verdicts, key=lambda v: v.id)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "passed": self.passed,
            "total": self.total,
            "per_category": {c: {"passed": p, "total": t} for c, (p, t) in self.per_category().items()},
            "mean_latency_s": self.mean_latency_s(),
            "cases": [
                {
                    "id": v.id,
                    "category": v.category,
                    "passed": v.passed,
                    "error": v.error,
                    "calls": list(v.calls),
                    "latency_s": v.latency_s,
                }
                for v in self.verdicts
            ],
        }


def run_bfcl(
    server: LLMServer,
    cases: Sequence[Case],
    mode: Mode = "tools",
    protocol: str = "bfcl-qwen-fc",
    *,
    concurrency: int | None = None,
    run: Callable[..., list[RequestRecord]] | None = None,
    **overrides: Any,
) -> BFCLResult:
    """Ask every case in ``mode`` under ``protocol`` and grade it with bfcl's checker."""
    if run is None:
        from pytest_llmbench.workload.requests import run_requests

        run = run_requests
    if mode not in MODES:
        raise ValueError(f"unknown BFCL prompt mode {mode!r}; known: {', '.join(MODES)}")
    proto = get_protocol(protocol)
    sampling = proto.request_body(**overrides)
    bodies = [request_body(c, mode, sampling) for c in cases]
    kind = "chat" if mode == "tools" else "completions"  # the engine's route for each (transport.kinds)
    records = run(server, bodies, concurrency=concurrency or proto.users, kind=kind)
    return BFCLResult(mode, [grade_record(c, r, mode) for c, r in zip(cases, records, strict=True)])
