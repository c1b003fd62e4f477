"""The built-in engine adapters, registered through ``pytest_llmbench_engines`` like any plugin's.

Adding an engine = one module with an :class:`Engine` subclass + a ``pytest_llmbench_engines`` hook
that returns it (here for a built-in; in a plugin or conftest for your own).
"""

from __future__ import annotations

import pytest

from pytest_llmbench.engines.base import Engine, SpecStats
from pytest_llmbench.engines.llamacpp import LlamaCppEngine
from pytest_llmbench.engines.sglang import SGLangEngine
from pytest_llmbench.engines.vllm import VLLMEngine

BUILT_IN: tuple[type[Engine], ...] = (LlamaCppEngine, SGLangEngine, VLLMEngine)


@pytest.hookimpl
def pytest_llmbench_engines() -> tuple[type[Engine], ...]:
    return BUILT_IN


__all__ = ["BUILT_IN", "Engine", "SpecStats"]
