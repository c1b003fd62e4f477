"""Keys for per-session objects kept on ``pytest.Config.stash`` (the seams between modules)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_llmbench.config import ServerConfig
    from pytest_llmbench.registry import Registry
    from pytest_llmbench.report.results import ResultsWriter

#: Every selected server config by name, loaded once at configure time.
CONFIGS = pytest.StashKey[dict[str, "ServerConfig"]]()
#: The engines and launchers the hooks registered (see registry.py).
REGISTRY: pytest.StashKey[Registry] = pytest.StashKey()
#: The results writer for this session (results.jsonl + per-config folders).
RESULTS: pytest.StashKey[ResultsWriter] = pytest.StashKey()
#: The gate session (baselines + verdicts); see pytest_llmbench.gate.session.
GATE = pytest.StashKey[Any]()
