"""JUnit XML properties, written in this one place: derived from the records the sink emits.

A CI system that reads only the JUnit file still sees each scenario's numbers and each check's verdict
(``llmbench.<scenario>.<metric>``, ``llmbench.verdict.<metric>`` + ``.message`` + ``.p_value``), each
comparison's (``llmbench.comparison.<metric>`` + ``.estimate`` + ``.p_value``), every ``bench.record``
value (``llmbench.<name>``) and, on the testsuite, the session verdict (``llmbench.verdict``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_llmbench.records.verdict import SessionVerdict

PREFIX = "llmbench"


def properties(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The JUnit properties one results record stands for (none for most kinds)."""
    kind = record.get("record")
    if kind == "scenario":
        scenario = record.get("scenario")
        return [
            (f"{PREFIX}.{scenario}.{k}", v)
            for k, v in (record.get("metrics") or {}).items()
            if isinstance(v, (int, float))
        ]
    if kind == "check":
        metric = record.get("metric")
        props: list[tuple[str, Any]] = [
            (f"{PREFIX}.verdict.{metric}", record.get("status")),
            (f"{PREFIX}.verdict.{metric}.message", record.get("message")),
        ]
        if record.get("p_value") is not None:
            props.append((f"{PREFIX}.verdict.{metric}.p_value", record["p_value"]))
        return props
    if kind == "comparison":  # reference vs candidate (compare/session.py)
        metric = record.get("metric")
        props = [(f"{PREFIX}.comparison.{metric}", record.get("verdict"))]
        estimate = record.get("ratio", record.get("difference"))
        if estimate is not None:
            props.append((f"{PREFIX}.comparison.{metric}.estimate", estimate))
        if record.get("p_value") is not None:
            props.append((f"{PREFIX}.comparison.{metric}.p_value", record["p_value"]))
        return props
    return []


def add_session_verdict(config: pytest.Config, verdict: SessionVerdict) -> bool:
    """The run's verdict as testsuite properties (``llmbench.verdict``, ``llmbench.headline``,
    ``llmbench.exit_status``) when ``--junitxml`` is on; call before the JUnit file is written."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - pytest moved it; the per-test properties still carry the detail
        return False
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return False
    xml.add_global_property(f"{PREFIX}.verdict", verdict.state.value)
    xml.add_global_property(f"{PREFIX}.headline", verdict.line())
    xml.add_global_property(f"{PREFIX}.exit_status", str(verdict.exit_status))
    return True


def add_property(item: pytest.Item, name: str, value: Any) -> None:
    """One ``bench.record`` value as ``llmbench.<name>``."""
    item.user_properties.append((f"{PREFIX}.{name}", value))


@pytest.hookimpl
def pytest_llmbench_record(record: Mapping[str, Any], item: pytest.Item | None) -> None:
    if item is not None:
        item.user_properties.extend(properties(record))
