"""Hand-made request records and a stand-in for run_requests, for the evals' pure logic."""

from pytest_llmbench.engines.base import SpecStats
from pytest_llmbench.workload.records import RequestRecord


def record(i=0, *, text="", reasoning="", finish="stop", tokens=10, accept=None, ok=True, tool_calls=(), e2e=0.5):
    if not ok:
        return RequestRecord(index=i, ok=False, error="HTTP 500: boom", e2e_s=e2e)
    spec = SpecStats(accept_length=accept) if accept is not None else None
    return RequestRecord(
        index=i,
        ok=True,
        text=text,
        reasoning=reasoning,
        finish_reason=finish,
        completion_tokens=tokens,
        spec=spec,
        tool_calls=list(tool_calls),
        e2e_s=e2e,
    )


class FakeRun:
    """Answers each body with ``respond(body)`` and remembers what was sent (and how)."""

    def __init__(self, respond):
        self.respond, self.calls = respond, []

    def __call__(self, server, bodies, *, concurrency=1, kind="chat", on_done=None, **kw):
        self.calls.append({"bodies": list(bodies), "concurrency": concurrency, "kind": kind})
        return [self.respond(b) for b in bodies]
