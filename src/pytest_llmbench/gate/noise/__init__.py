"""Noise models, one per module, and the registry the baseline files name them by."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_llmbench.gate.noise.base import NOISE_MODELS, NoiseModel, NoiseModelError, register_noise_model
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


def noise_from_dict(d: dict[str, Any]) -> NoiseModel:
    """The inverse of ``NoiseModel.to_dict``; raises ValueError naming what is wrong."""
    if not isinstance(d, dict) or "name" not in d:
        raise ValueError(f"a noise model is written as {{name: ..., <params>}}, got {d!r}")
    params = dict(d)
    name = params.pop("name")
    cls = NOISE_MODELS.get(name)
    if cls is None:
        raise ValueError(
            f"unknown noise model {name!r} (known: {', '.join(sorted(NOISE_MODELS))}); a model "
            f"of your own is known once a pytest_llmbench_noise_models hook returns it or its class is "
            f"defined (in conftest.py)"
        )
    try:
        return cls.from_params(**params)
    except (TypeError, ValueError) as e:
        raise ValueError(f"bad parameters for noise model {name}: {e}") from None


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
