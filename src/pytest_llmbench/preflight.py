"""The Docker engine preflight: once the selection is known and before any server starts, a stopped daemon
is one line naming the address tried (not a failed start per test), and the containers of dead sessions
are removed, said on the terminal. A plugin of its own (plugin.py loads it), above launchers/ and the
scheduler: it reads the session's registry, configs and selected items, which no launcher knows."""

from __future__ import annotations

import pytest

from pytest_llmbench.config import CONFIGS
from pytest_llmbench.launchers.docker import DockerLauncher, DockerUnavailable
from pytest_llmbench.registry import REGISTRY
from pytest_llmbench.scheduling import server_config_name


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if config.option.collectonly:
        return  # no server starts: listing a docker suite on a machine without Docker is fine
    if REGISTRY not in config.stash or CONFIGS not in config.stash:
        return  # (under xdist each worker checks: the controller collects nothing)
    registry, configs = config.stash[REGISTRY], config.stash[CONFIGS]
    names = {n for item in session.items if (n := server_config_name(item)) is not None}
    for launcher in registry.launchers.values():
        if isinstance(launcher, DockerLauncher):
            mine = [configs[n] for n in sorted(names) if n in configs and configs[n].launcher == launcher.name]
            try:
                launcher.preflight(mine)
            except DockerUnavailable as e:
                raise pytest.UsageError(str(e)) from None
