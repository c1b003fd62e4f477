"""Which tests a config runs, by its ``scenarios`` key: shell-style patterns (``fnmatch``) over each test's names.

A test's names are the ``name`` of every Scenario among its parameters (``parametrize("scenario", SCENARIOS)``),
else its function name and its parameter id without the config (``test_serving[chat-1u]`` → ``chat-1u``). A
config with no ``scenarios`` runs everything. A config that lists them leaves out every test none of its
patterns matches, so a 32k-context production config can say it runs ``chat-*`` and never the 120k-prompt
scenarios; ``--collect-only`` then lists what was left out and why (``pytest_report_collectionfinish``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from typing import Any


def test_names(item: Any, server_id: str | None = None) -> list[str]:
    """The names a config's patterns are matched against: Scenario names, else the test's name and id."""
    params = getattr(getattr(item, "callspec", None), "params", {}) or {}
    scenarios = [v.name for v in params.values() if type(v).__name__ == "Scenario" and hasattr(v, "name")]
    if scenarios:
        return scenarios
    names = [getattr(item, "originalname", None) or item.name.split("[", 1)[0]]
    callspec_id = getattr(getattr(item, "callspec", None), "id", "") or ""
    if server_id:  # the config's own part of the id is not the test's
        callspec_id = callspec_id.replace(server_id, "", 1).replace("--", "-").strip("-")
    if callspec_id:
        names.append(callspec_id)
    return names


def left_out_by(patterns: Sequence[str], names: Iterable[str]) -> bool:
    """True when the config lists scenarios and none of ``names`` matches any of them."""
    if not patterns:
        return False
    return not any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns)


def reason(config: str, patterns: Sequence[str], names: Sequence[str]) -> str:
    return f"config {config} runs only scenarios {', '.join(patterns)}; this test is {', '.join(names)}"


def report_lines(left_out: list[tuple[str, str]]) -> list[str]:
    """The collection report: how many (config, test) pairs each config's ``scenarios`` left out, and which."""
    if not left_out:
        return []
    lines = [f"llmbench: {len(left_out)} test(s) left out by their config's scenarios key:"]
    lines += [f"  {nodeid}: {why}" for nodeid, why in left_out]
    return lines
