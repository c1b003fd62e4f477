"""Launcher registry: config ``launcher:`` name → launcher class. One line per launcher."""

from pytest_llmbench.launchers.base import Handle, LaunchRequest, Launcher, stop_all
from pytest_llmbench.launchers.docker import DockerLauncher
from pytest_llmbench.launchers.subprocess import SubprocessLauncher

LAUNCHERS: dict[str, type] = {
    SubprocessLauncher.name: SubprocessLauncher,
    DockerLauncher.name: DockerLauncher,
}

__all__ = ["LAUNCHERS", "Handle", "LaunchRequest", "Launcher", "stop_all"]
