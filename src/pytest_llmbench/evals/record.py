"""Where an eval's details go: one results.jsonl line of the eval's own kind, beside the gated numbers.

Why: ``bench.check`` keeps the one number that is gated; the per-request and per-case detail (which
BFCL cases failed, each prompt's accept length) is what a reader needs to see why, and it belongs in
the results folder, not in JUnit properties.
"""

from __future__ import annotations

from typing import Any


def write_eval(bench: Any, kind: str, payload: dict[str, Any]) -> None:
    """Emit ``{"record": kind, "config", "test", "test_key", **payload}`` through the bench's sink."""
    bench.emit({"record": kind, **payload})
