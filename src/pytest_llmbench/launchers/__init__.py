"""The built-in launchers, registered through ``pytest_llmbench_launchers`` like any plugin's.

A launcher is registered as an instance built with its options (``--no-pull``,
``--llmbench-candidate-image`` for Docker), so it never reads them from the environment; the Docker engine
is checked once the selection is known, before any server starts (preflight.py, a plugin of its own:
it reads the session's selection, which a launcher does not know).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmbench.launchers.base import Handle, Launcher, LaunchRequest, stop_all
from pytest_llmbench.launchers.docker import DockerLauncher
from pytest_llmbench.launchers.docker import add_options as _docker_options
from pytest_llmbench.launchers.gpus import add_options as _gpu_options
from pytest_llmbench.launchers.subprocess import SubprocessLauncher


def pytest_addoption(parser: pytest.Parser) -> None:
    _gpu_options(parser)
    _docker_options(parser)


@pytest.hookimpl
def pytest_llmbench_launchers(config: Any) -> list[Launcher]:
    """The built-ins, with this session's options (``config`` None: defaults, outside pytest)."""
    return [SubprocessLauncher(), DockerLauncher.from_options(config)]


__all__ = ["DockerLauncher", "Handle", "LaunchRequest", "Launcher", "SubprocessLauncher", "stop_all"]
