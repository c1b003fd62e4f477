"""The gate: baselines, noise models and verdicts behind ``bench.check``."""

from pytest_llmbench.gate.noise import (
    NOISE_MODELS,
    Binomial,
    History,
    McNemar,
    NoiseModel,
    PairedBootstrap,
    PairedT,
    Relative,
    Spread,
    StdErr,
)
from pytest_llmbench.gate.session import GateSession
from pytest_llmbench.gate.types import Verdict

__all__ = [
    "NOISE_MODELS",
    "Binomial",
    "GateSession",
    "History",
    "McNemar",
    "NoiseModel",
    "PairedBootstrap",
    "PairedT",
    "Relative",
    "Spread",
    "StdErr",
    "Verdict",
]
