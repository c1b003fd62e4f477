"""Which xdist worker runs which test: every test of one server config on one worker, so each config's
server starts once in the whole run.

pytest-xdist's ``--dist loadgroup`` did this through the ``xdist_group`` mark, by appending ``@group``
to each item's node id on the worker. pytest 9.2 made the node id a structured value that the
suffix no longer reaches, so the groups silently fell apart (every worker started every config). The
grouping is ours to keep, so the plugin brings its own scheduler through xdist's documented
``pytest_xdist_make_scheduler`` hook: xdist's scope scheduler, with the scope of a test being its
config, read from the node id with the config names the controller loaded.

The same scheduler checks, before any test is sent, that each selected config can get its GPUs on a
worker; the error then reaches the user as one line instead of a crashed worker.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

#: ``--dist`` modes that split tests across workers; ``each`` and ``no`` are left to xdist.
SPLITTING_MODES = frozenset({"load", "loadscope", "loadfile", "loadgroup", "worksteal"})
SCOPE_PREFIX = "llmbench-config:"


def without_group_suffix(nodeid: str) -> str:
    """The node id without the ``@group`` that xdist's ``loadgroup`` appends (on pytest before 9.2)."""
    return nodeid.rpartition("@")[0] if "@" in nodeid.rpartition("]")[2] else nodeid


def param_tokens(nodeid: str) -> list[str]:
    """The ``-``-separated parts of a node id's parameter id (``test_x[cfg-a-4]`` → cfg, a, 4)."""
    nodeid = without_group_suffix(nodeid)
    last = nodeid.rpartition("::")[2]
    if "[" not in last or not last.endswith("]"):
        return []
    return [p for p in last[last.index("[") + 1 : -1].split("-") if p]


_START = re.compile(r"start\d+of\d+")


def start_id(config_name: str, k: int, starts: int) -> str:
    """The parameter id of a config's ``k``-th server start under ``--llmbench-record N`` (the name alone
    when it starts once): ``smol-nospec-start2of3``."""
    return config_name if starts == 1 else f"{config_name}-start{k}of{starts}"


def start_param(config_name: str, k: int, starts: int) -> str:
    """The ``llm_server`` parameter value of that start: a session-scoped fixture is cached by its
    parameter's value, so each start needs its own (``smol-nospec@start2``) to get its own server."""
    return config_name if starts == 1 else f"{config_name}@start{k}"


def config_of_param(value: str) -> str:
    """The config name in an ``llm_server`` parameter value (see :func:`start_param`)."""
    return value.split("@start", 1)[0]


def server_config_name(item: Any) -> str | None:
    """The config a collected test (or a fixture request's node) runs against: its ``llm_server``
    parameter, None for tests without one (or with pytest's empty-parameter marker, when no config is
    selected)."""
    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("llm_server") if callspec else None
    return config_of_param(name) if isinstance(name, str) else None


def is_start_token(part: str) -> bool:
    return bool(_START.fullmatch(part))


def find_name(parts: list[str], name: str) -> int | None:
    """Where config ``name`` (which may itself contain ``-``) starts among a parameter id's parts."""
    want = name.split("-")
    for i in range(len(parts) - len(want) + 1):
        if parts[i : i + len(want)] == want:
            return i
    return None


def config_in_nodeid(nodeid: str, names: Iterable[str]) -> str | None:
    """The config a parameterized node id belongs to: the longest config name found in its
    parameter id, or None."""
    parts = param_tokens(nodeid)
    found = [n for n in names if find_name(parts, n) is not None]
    return max(found, key=len) if found else None


def gpu_problems(configs: dict[str, Any], nodeids: Iterable[str], workers: int, pytest_config: Any) -> list[str]:
    """The GPU-request errors of the configs these node ids will run, split over ``workers``."""
    from pytest_llmbench.launchers.gpus import check_gpu_requests

    used = sorted({n for nid in nodeids if (n := config_in_nodeid(nid, configs)) is not None})
    return check_gpu_requests(pytest_config, [configs[n] for n in used], workers=workers)


def make_scheduler(pytest_config: Any, log: Any, configs: dict[str, Any]) -> Any:
    """A scope scheduler whose scope is the server config (tests without a server: one scope each)."""
    from xdist.scheduler import LoadScopeScheduling

    class ConfigScheduling(LoadScopeScheduling):
        """xdist's scope scheduling with one scope per llmbench config; checks GPUs before sending."""

        def _split_scope(self, nodeid: str) -> str:
            name = config_in_nodeid(nodeid, configs)
            return SCOPE_PREFIX + name if name is not None else nodeid

        def remove_node(self, node: Any) -> str | None:
            """A crashed worker's test is reported failed and never rerun (xdist's scope scheduler would
            queue it again, and each replacement worker would crash on it and restart its server); the
            rest of its config goes to the next free worker."""
            workload = self.assigned_work.pop(node)
            if not self._pending_of(workload):
                return None
            crashed = next(nid for unit in workload.values() for nid, done in unit.items() if not done)
            for unit in workload.values():
                if crashed in unit:
                    unit[crashed] = True
            self.workqueue.update({scope: unit for scope, unit in workload.items() if not all(unit.values())})
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

        def schedule(self) -> None:
            first = self.collection is None  # later calls only reschedule
            collection: list[str] = next(iter(self.registered_collections.values()), [])
            problems = gpu_problems(configs, collection, self.numnodes, pytest_config) if first else []
            if problems:
                import pytest

                pytest.exit("; ".join(problems), returncode=pytest.ExitCode.USAGE_ERROR)
            super().schedule()

    return ConfigScheduling(pytest_config, log)


def wants_own_scheduler(dist_mode: str | None, config_names: Collection[str]) -> bool:
    return bool(config_names) and dist_mode in SPLITTING_MODES


def test_key(item: Any, config_name: str | None) -> str:
    """The node id without the config's part of the parametrization (its ``-startKofN`` under
    ``--llmbench-record`` included) and without an xdist group suffix, so one test has one baseline key
    however it was run. Here, beside the node-id parsing it shares, for the gate and the fixtures alike."""
    nodeid = without_group_suffix(item.nodeid)
    parts = param_tokens(nodeid)
    at = find_name(parts, config_name) if config_name else None
    if at is None:
        return nodeid
    end = at + len(config_name.split("-"))  # type: ignore[union-attr]
    if end < len(parts) and is_start_token(parts[end]):
        end += 1
    parts = parts[:at] + parts[end:]
    base = nodeid[: nodeid.rindex("[")]
    return f"{base}[{'-'.join(parts)}]" if parts else base
