"""pytest-llmbench: LLM-serving benchmarks as pytest tests, gated against baselines."""

from pytest_llmbench.config import ConfigError, ServerConfig, load_configs
from pytest_llmbench.report.results import load_results
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult, run_scenario

__all__ = ["ConfigError", "Scenario", "ScenarioResult", "ServerConfig", "load_configs", "load_results", "run_scenario"]
__version__ = "0.1.0"
