"""One base for every error a user can cause, so a caller can catch the plugin's errors in one place.

Each error's message names what to fix: the file, config and key of a config; the baseline file and
entry; the request. Modules keep their own subclasses (``ServerStartError`` in server.py, …) next to the
code that raises them; the ones several modules raise live here.
"""

from __future__ import annotations

from pathlib import Path


class LlmbenchError(Exception):
    """Base of the plugin's own errors (a bad config, a server that did not start, a bad baseline)."""


class ConfigError(LlmbenchError):
    """A config file is wrong; the message names file, config and key, in one line."""

    def __init__(self, file: Path | str, message: str, config: str | None = None, key: str | None = None):
        where = str(file)
        if config:
            where += f": config {config!r}"
        if key:
            where += f", key {key!r}"
        self.file, self.config, self.key = str(file), config, key
        super().__init__(f"{where}: {message}")


class RegistryError(LlmbenchError, ValueError):
    """A hook registered something unusable: a class without a name, or a name taken by another class."""


__all__ = ["ConfigError", "LlmbenchError", "RegistryError"]
