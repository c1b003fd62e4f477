"""The one way a measurement leaves the process: :func:`emit` hands a plain record to every results sink.

Sinks implement ``pytest_llmbench_record`` (see hookspec.py): the built-ins write results.jsonl
(``records.results.ResultsWriter``) and JUnit properties (``report.junit``); a plugin or conftest adds its
own (a database, a dashboard) the same way. Records are made JSON-safe and have every registered secret
scrubbed before any sink sees them, so no sink can leak what the results file would not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_llmbench import redact


def clean(value: Any) -> Any:
    """JSON-safe: NaN/inf → None, tuples → lists, numpy scalars → Python numbers, unknown objects → str."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if hasattr(value, "item"):  # numpy scalars
        return clean(value.item())
    return str(value)


def plain(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` as every sink receives it: JSON-safe, secrets scrubbed, with a ``"record"`` kind."""
    if not isinstance(record.get("record"), str):
        raise ValueError(f"a results record needs a string 'record' kind, got {record.get('record')!r}")
    return json.loads(redact.scrub(json.dumps(clean(dict(record)), sort_keys=True)))


def emit(config: pytest.Config, record: Mapping[str, Any], item: pytest.Item | None = None) -> dict[str, Any]:
    """Send one record to every sink; returns the record as they received it."""
    out = plain(record)
    config.hook.pytest_llmbench_record(config=config, record=out, item=item)
    return out


__all__ = ["clean", "emit", "plain"]
