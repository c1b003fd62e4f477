"""``whole``: a test's results line made whole for the real writer, which checks every line of a declared kind
(records/kinds.py) for its required fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_llmbench.records.kinds import KINDS


def whole(record: Mapping[str, Any], *, bench: bool = False) -> dict[str, Any]:
    """``record`` with each required field of its kind that it lacks set to None (``session_id`` is the
    writer's own; with ``bench``, ``config``/``test``/``test_key`` are left to ``Bench.emit``): a test's folder
    states only the fields it is about, and still goes through the real ``ResultsWriter``. Readers read a
    None field as they read an absent one (``.get(…) or …``)."""
    kind = KINDS.get(str(record.get("record")))
    if kind is None:
        return dict(record)
    stamped = {"session_id"} | ({"config", "test", "test_key"} if bench else set())
    required = kind.schema.__required_keys__
    return {**{k: None for k in sorted(required) if k not in stamped}, **record}
