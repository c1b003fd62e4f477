"""Noise models, one per module, and the registry the baseline files name them by."""

from __future__ import annotations

import pytest

from pytest_llmbench.gate.noise.base import (
    NOISE_MODELS,
    NoiseModel,
    NoiseModelError,
    noise_from_dict,
    register_noise_model,
)
from pytest_llmbench.gate.noise.binomial import Binomial
from pytest_llmbench.gate.noise.history import History
from pytest_llmbench.gate.noise.paired import McNemar, PairedBootstrap, PairedT
from pytest_llmbench.gate.noise.relative import Relative
from pytest_llmbench.gate.noise.spread import Spread
from pytest_llmbench.gate.noise.stderr import StdErr

BUILT_IN = (StdErr, Relative, Spread, Binomial, History, PairedT, McNemar, PairedBootstrap)


@pytest.hookimpl
def pytest_llmbench_noise_models() -> tuple[type[NoiseModel], ...]:
    return BUILT_IN


def register_from_hooks(config: pytest.Config) -> None:
    """Put every class the ``pytest_llmbench_noise_models`` implementations return into NOISE_MODELS."""
    for found in config.hook.pytest_llmbench_noise_models(config=config):
        for cls in found or ():
            register_noise_model(cls)


__all__ = [
    "NOISE_MODELS",
    "Binomial",
    "History",
    "McNemar",
    "NoiseModel",
    "NoiseModelError",
    "PairedBootstrap",
    "PairedT",
    "Relative",
    "Spread",
    "StdErr",
    "noise_from_dict",
    "register_noise_model",
]
