"""The common decision runner: bounded concurrency over cases, every failure recorded, input order kept.

Requests go through the project's one request layer (:mod:`pytest_llmbench.transport.kinds`, kind
``json``): one keep-alive pool per run, and a pooled connection the server closed before answering
(llama-server does this) is reconnected once by the transport, not counted as a failed decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_llmbench.datasets.decision_schema import Case, Decision
from pytest_llmbench.transport.http import StreamClient
from pytest_llmbench.transport.kinds import JsonReply, client_for_url, send_json


class DecisionClient:
    """Subclasses answer one case (:meth:`decide_case`); this class runs many and never raises per case.

    ``route`` is where requests go: the class's own route by default, or the one the engine declares.
    """

    route: str = ""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        extra_body: Mapping[str, Any] | None = None,
        route: str | None = None,
        api_key: str | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key  # sent as a bearer token (the config's api_key_env)
        self.model = model
        self.concurrency = max(1, int(concurrency))
        self.timeout_s = timeout_s
        self.extra_body = dict(extra_body or {})
        if route:
            self.route = route

    async def decide_case(self, client: StreamClient, case: Case) -> list[Decision]:
        raise NotImplementedError

    async def arun(
        self, cases: Sequence[Case], *, progress: Callable[[int, int], None] | None = None
    ) -> list[Decision]:
        sem = asyncio.Semaphore(self.concurrency)
        done = 0
        client = client_for_url(self.base_url, api_key=self.api_key)

        async def one(case: Case) -> list[Decision]:
            nonlocal done
            async with sem:
                try:
                    out = await self.decide_case(client, case)
                except Exception as e:  # a bug or an unexpected error: fail the case, not the run
                    out = [
                        Decision.failed(case, q, f"client error: {type(e).__name__}: {e}"[:300])
                        for q in case.questions.values()
                    ]
            done += 1
            if progress is not None:
                progress(done, len(cases))
            return out

        try:
            per_case = await asyncio.gather(*(one(c) for c in cases))
        finally:
            client.close()
        return [d for ds in per_case for d in ds]

    def run(self, cases: Sequence[Case], *, progress: Callable[[int, int], None] | None = None) -> list[Decision]:
        """Answer every question of ``cases``; one Decision per question, failures included."""
        return asyncio.run(self.arun(cases, progress=progress))

    async def post(self, client: StreamClient, body: dict[str, Any]) -> JsonReply:
        """POST ``body`` to this client's route; failures come back as the reply's ``error``."""
        return await send_json(client, self.route, body, timeout_s=self.timeout_s)
