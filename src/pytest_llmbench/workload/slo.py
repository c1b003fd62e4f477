"""Service-level objectives and goodput, with ``vllm bench serve --goodput`` semantics.

A request is *good* when it completed and meets every SLO given (value ≤ limit, in ms). Per-request TPOT
is (E2E − TTFT) / (output_len − 1), and a one-token answer has TPOT 0 (vLLM's rule). ``itl`` is not a
vLLM key: here it bounds the request's largest token gap (a stall), the one ITL a single request can
miss. Errored requests are counted and fail the SLO, so a server that drops requests cannot look better.

Metrics: ``slo_attainment`` = good / all requests sent, ``slo_good`` and ``slo_requests`` (the count
and n the gate's Binomial model needs), ``request_goodput`` = good requests / duration, and
``output_token_goodput`` = output tokens of good requests / duration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_llmbench.slo_spec import SLO_KEYS, SloError, parse_slo

if TYPE_CHECKING:
    from pytest_llmbench.workload.records import RequestRecord

__all__ = ["SLO_KEYS", "SloError", "is_good", "parse_slo", "request_values_ms", "resolve_slo", "slo_metrics"]


def request_values_ms(rec: RequestRecord) -> dict[str, float]:
    """The request's value for each SLO key (ms); empty for a failed request."""
    if not rec.ok or rec.ttft_s is None or rec.e2e_s is None:
        return {}
    n = rec.completion_tokens
    tpot = (rec.e2e_s - rec.ttft_s) / (n - 1) if n > 1 else 0.0
    itls = rec.itls_s()
    return {
        "ttft": rec.ttft_s * 1e3,
        "tpot": tpot * 1e3,
        "itl": max(itls) * 1e3 if itls else 0.0,
        "e2el": rec.e2e_s * 1e3,
    }


def is_good(rec: RequestRecord, slo: Mapping[str, float]) -> bool:
    """Completed and within every limit (≤); a failed request is never good."""
    values = request_values_ms(rec)
    return bool(values) and all(values[k] <= limit for k, limit in slo.items())


def slo_metrics(records: Sequence[RequestRecord], duration_s: float, slo: Mapping[str, float]) -> dict[str, Any]:
    """Attainment (with its count and n for the Binomial gate), request goodput and token goodput."""
    good = [r for r in records if is_good(r, slo)]
    duration_s = max(duration_s, 1e-9)
    n = len(records)
    return {
        "slo": dict(slo),
        "slo_good": len(good),
        "slo_requests": n,
        "slo_attainment": len(good) / n if n else float("nan"),
        "request_goodput": len(good) / duration_s,
        "output_token_goodput": sum(r.completion_tokens for r in good) / duration_s,
    }


def resolve_slo(cli: str | None, scenario: Mapping[str, float] | None, config: Any) -> dict[str, float]:
    """Which SLO a scenario is judged by: ``--llmbench-slo`` over the test's Scenario over the config's
    ``slo`` key (the CLI wins, so one command line can re-judge every bench at a team's SLO)."""
    if cli:
        return parse_slo(cli, "--llmbench-slo")
    if scenario:
        return dict(scenario)
    return dict(getattr(config, "slo", None) or {})
