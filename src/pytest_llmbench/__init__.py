"""pytest-llmbench: LLM-serving benchmarks as pytest tests, gated against baselines.

The public surface is what this module exports; everything else is internal and may move. Extension
points are the hooks in :mod:`pytest_llmbench.hookspec` (engines, launchers, noise models, sinks).
"""

from pytest_llmbench.config import ServerConfig, load_configs
from pytest_llmbench.engines.base import Engine, SpecStats
from pytest_llmbench.errors import ConfigError, LlmbenchError
from pytest_llmbench.fixtures import Bench
from pytest_llmbench.gate.noise import Binomial, History, NoiseModel, Relative, Spread, StdErr
from pytest_llmbench.gate.types import Verdict
from pytest_llmbench.metrics import ScenarioMetrics
from pytest_llmbench.records.results import load_results
from pytest_llmbench.server import LLMServer, ServerStartError, start_server
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult, run_scenario

__all__ = [
    "Bench",
    "Binomial",
    "ConfigError",
    "Engine",
    "History",
    "LLMServer",
    "LlmbenchError",
    "NoiseModel",
    "Relative",
    "Scenario",
    "ScenarioMetrics",
    "ScenarioResult",
    "ServerConfig",
    "ServerStartError",
    "SpecStats",
    "Spread",
    "StdErr",
    "Verdict",
    "load_configs",
    "load_results",
    "run_scenario",
    "start_server",
]
__version__ = "0.1.0"
