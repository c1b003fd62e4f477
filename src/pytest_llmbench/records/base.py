"""The fields every results line carries, whatever its kind: the bases of the schemas in ``kinds.py`` and
``compare_kinds.py`` (a module of their own so both import them; see kinds.py for the why of it all).

No ``from __future__ import annotations``: ``TypedDict`` reads ``NotRequired`` from evaluated annotations.
"""

from typing import Any, NotRequired, TypedDict

#: The field that carries a line's schema version (records/kinds.py).
VERSION = "record_version"

Json = dict[str, Any]


class Line(TypedDict):
    """What the results writer (``records/results.py`` ``ResultsWriter.write``) adds to every line."""

    session_id: str  # the session that wrote it (an xdist worker's is its controller's)
    origin: NotRequired[Json | None]  # runner profile, host, shard: set when the plugin knows them
    record_version: NotRequired[int]  # the kind's schema version; absent (read as 1) on older lines


class BenchLine(Line):
    """What ``Bench.emit`` (fixtures.py) stamps on a test's lines: its config, node id and baseline key."""

    config: str | None  # None for a test without a server
    test: str
    test_key: str
