"""``--llmbench-shard K/N``: run whole server configs on one of N machines of a CI matrix.

A config's tests never split across shards, so each server starts once in the whole fleet. Every shard
computes the same assignment from the same inputs (the collected configs and their expected cost), so
the N jobs need no coordinator: the CI system's matrix index is all a job knows. The cost of a config
is its wall-clock in a previous results folder (``--llmbench-durations DIR``) when there is one, else
its number of tests; configs are dealt out longest first to the least-loaded shard.

Tests that use no server run on shard 1 only, so a merged folder holds them once.
"""

from __future__ import annotations

import argparse
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_llmbench import stash
from pytest_llmbench.scheduling import server_config_name

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based, like the ``K`` users type) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/3"`` → Shard(2, 3); anything else is a ValueError saying what K/N must be."""
    m = _SHARD.fullmatch(str(text))
    if not m:
        raise ValueError(f"expected K/N (e.g. 2/3), got {text!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"{text!r}: K must be between 1 and N (N >= 1)")
    return Shard(k, n)


def _shard_type(text: str) -> Shard:
    try:
        return parse_shard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmbench-fleet", "llmbench across several machines")
    group.addoption(
        "--llmbench-shard",
        dest="llmbench_shard",
        type=_shard_type,
        default=None,
        metavar="K/N",
        help="run only the server configs of shard K of N (whole configs, balanced by expected "
        "cost); every shard must be given the same tests, configs and -m/-k",
    )
    group.addoption(
        "--llmbench-durations",
        dest="llmbench_durations",
        default=None,
        metavar="DIR",
        help="results folder of an earlier run: its per-config wall-clock balances the shards "
        "(default: balance by number of tests)",
    )


# --- the pure part: costs and assignment ----------------------------------------------------------------


def assign(costs: Mapping[str, float], count: int) -> list[list[str]]:
    """Configs → ``count`` shards: longest first onto the least-loaded shard (ties: lowest shard, name).

    Deterministic for a given mapping whatever its order, so every job of the matrix agrees.
    """
    if count < 1:
        raise ValueError("shard count must be at least 1")
    shards: list[list[str]] = [[] for _ in range(count)]
    load = [0.0] * count
    for name in sorted(costs, key=lambda n: (-float(costs[n]), n)):
        i = min(range(count), key=lambda j: (load[j], j))
        shards[i].append(name)
        load[i] += float(costs[name])
    return shards


def expected_costs(tests: Mapping[str, int], durations: Mapping[str, float] | None = None) -> dict[str, float]:
    """Seconds per config from ``durations`` where known; the others by their test count, scaled by the
    known configs' seconds per test (or plain test counts when no duration is known)."""
    durations = {k: float(v) for k, v in (durations or {}).items() if k in tests and v > 0}
    known_tests = sum(tests[k] for k in durations)
    per_test = sum(durations.values()) / known_tests if known_tests else 1.0
    return {name: durations.get(name, n * per_test) for name, n in tests.items()}


def durations_from_results(results_dir: Path | str) -> dict[str, float]:
    """Wall-clock seconds of each config in a results folder: startup plus first to last record."""
    from pytest_llmbench.records.read import of_kind
    from pytest_llmbench.records.results import iter_records

    first: dict[str, datetime] = {}
    last: dict[str, datetime] = {}
    startup: dict[str, float] = {}
    records = list(iter_records(results_dir))
    for rec in records:
        name, when = rec.get("config"), rec.get("time")
        if not isinstance(name, str) or not isinstance(when, str):
            continue
        try:
            t = datetime.fromisoformat(when)
        except ValueError:
            continue
        first[name] = min(first.get(name, t), t)
        last[name] = max(last.get(name, t), t)
    for server in of_kind(records, "server"):
        name, up = server.get("config"), server.get("startup_s")
        if isinstance(name, str) and isinstance(up, (int, float)):
            startup[name] = startup.get(name, 0.0) + float(up)
    return {n: (last[n] - first[n]).total_seconds() + startup.get(n, 0.0) for n in first}


# --- where a number came from ---------------------------------------------------------------------------


def origin(runner_profile: str | None, shard: Shard | None) -> dict[str, Any]:
    """Runner profile, host name and shard, stamped on every results line (no secrets: names only)."""
    return {"profile": runner_profile, "host": socket.gethostname(), "shard": str(shard) if shard else None}


# --- the pytest side ------------------------------------------------------------------------------------

_config_of = server_config_name


def tests_per_config(items: Iterable[pytest.Item]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        name = _config_of(item)
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    return counts


class ShardSelector:
    """Keeps this shard's configs after every other deselection (-m, -k, ``llm_configs``) so all shards
    balance the same selection; registered by the plugin (one call), stamps results with their origin."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.shard: Shard | None = config.getoption("llmbench_shard", None)
        durations = config.getoption("llmbench_durations", None)
        self.durations_dir = Path(config.invocation_params.dir, durations) if durations else None
        if self.durations_dir is not None and not self.durations_dir.is_dir():
            raise pytest.UsageError(f"--llmbench-durations {durations}: not a folder")
        self.assignment: list[list[str]] = []
        self.costs: dict[str, float] = {}
        # imported here: gate/session.py reads this module while records/results.py (through gate/files.py) loads
        from pytest_llmbench.records.results import RESULTS

        gate = config.stash.get(stash.GATE, None)
        results = config.stash.get(RESULTS, None)
        if results is not None:
            results.origin = origin(gate.runner.slug if gate is not None else None, self.shard)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if self.shard is None:
            return
        durations = None
        if self.durations_dir is not None:
            try:
                durations = durations_from_results(self.durations_dir)
            except (FileNotFoundError, ValueError) as e:
                raise pytest.UsageError(f"--llmbench-durations {self.durations_dir}: {e}") from None
        self.costs = expected_costs(tests_per_config(items), durations)
        self.assignment = assign(self.costs, self.shard.count)
        mine = set(self.assignment[self.shard.index - 1])
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            name = _config_of(item)
            ours = name in mine if name is not None else self.shard.index == 1
            (keep if ours else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def describe(self) -> list[str]:
        """One line per shard: its configs and expected cost (``*`` marks this one)."""
        timed = bool(self.config.getoption("llmbench_durations", None))
        lines = []
        for i, names in enumerate(self.assignment, start=1):
            cost = sum(self.costs[n] for n in names)
            unit = "s" if timed else " test" if round(cost) == 1 else " tests"
            mark = "*" if self.shard and i == self.shard.index else " "
            lines.append(
                f"{mark}shard {i}/{len(self.assignment)}: {', '.join(names) or '(no configs)'} "
                f"(expected {cost:.0f}{unit})"
            )
        return lines

    def pytest_report_collectionfinish(self, config: pytest.Config) -> list[str]:
        return self.describe() if self.shard else []

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """A shard that drew no configs (more shards than configs) succeeds: its job has nothing to do."""
        if (
            self.shard
            and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
            and any(self.assignment)
            and not self.assignment[self.shard.index - 1]
        ):
            session.exitstatus = pytest.ExitCode.OK
