"""The engines and launchers a session knows, filled from the hooks, and the config checks that need them.

``config.py`` only parses; whether a config's ``engine:`` and ``launcher:`` exist and accept it is
decided here, where the registries are known. Outside a pytest session (a script calling
``start_server``) :meth:`Registry.builtin` gives the built-ins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmbench.errors import ConfigError, RegistryError

if TYPE_CHECKING:
    import pytest

    from pytest_llmbench.config import ServerConfig
    from pytest_llmbench.engines.base import Engine
    from pytest_llmbench.launchers.base import Launcher


def _by_name(kind: str, items: Iterable[Any], into: dict[str, Any]) -> None:
    for item in items:
        name = getattr(item, "name", None)
        if not isinstance(name, str) or not name:
            raise RegistryError(f"{kind} {item!r} has no name (a class attribute name = '...')")
        old = into.get(name)
        if old is not None and _origin(old) != _origin(item):
            raise RegistryError(f"{kind} name {name!r} is registered twice: {_origin(old)} and {_origin(item)}")
        into[name] = item


def _origin(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass
class Registry:
    """Engine classes and launcher instances by the names configs use."""

    engines: dict[str, type[Engine]] = field(default_factory=dict)
    launchers: dict[str, Launcher] = field(default_factory=dict)

    @classmethod
    def from_hooks(cls, config: pytest.Config) -> Registry:
        """Everything the plugins and conftests registered through ``pytest_llmbench_engines`` /
        ``pytest_llmbench_launchers`` (the built-ins included)."""
        reg = cls()
        for found in config.hook.pytest_llmbench_engines(config=config):
            _by_name("engine", found or (), reg.engines)
        for found in config.hook.pytest_llmbench_launchers(config=config):
            _by_name("launcher", found or (), reg.launchers)
        return reg

    @classmethod
    def builtin(cls) -> Registry:
        """The package's own engines and launchers, with default options (no pytest session needed)."""
        from pytest_llmbench import engines, launchers

        reg = cls()
        _by_name("engine", engines.pytest_llmbench_engines(), reg.engines)
        _by_name("launcher", launchers.pytest_llmbench_launchers(None), reg.launchers)
        return reg

    def engine(self, name: str) -> Engine:
        """A fresh adapter for engine ``name`` (adapters hold a config once configured)."""
        return self.engines[name]()

    def launcher(self, name: str) -> Launcher:
        return self.launchers[name]

    def check(self, cfg: ServerConfig) -> None:
        """Raise :class:`ConfigError` (file, config, key) when no registered engine/launcher takes ``cfg``."""
        engine = self.engines.get(cfg.engine)
        if engine is None:
            raise ConfigError(
                cfg.source, f"unknown engine {cfg.engine!r} (known: {sorted(self.engines)})", cfg.name, "engine"
            )
        launcher = self.launchers.get(cfg.launcher)
        if launcher is None:
            raise ConfigError(
                cfg.source, f"unknown launcher {cfg.launcher!r} (known: {sorted(self.launchers)})", cfg.name, "launcher"
            )
        for problem in (engine.validate(cfg), launcher.validate(cfg)):
            if problem:
                key, message = problem
                raise ConfigError(cfg.source, message, cfg.name, key)

    def check_all(self, configs: Iterable[ServerConfig]) -> None:
        for cfg in configs:
            self.check(cfg)


#: The engines and launchers the hooks registered, on ``pytest.Config.stash``.
REGISTRY = pytest.StashKey[Registry]()


__all__ = ["REGISTRY", "Registry"]
