"""The serving workload: prompts → streamed requests → per-request records → scenario results."""

from pytest_llmbench.workload.records import RequestRecord
from pytest_llmbench.workload.requests import run_requests
from pytest_llmbench.workload.scenario import Scenario, ScenarioResult, WorkloadError, run_scenario

__all__ = ["RequestRecord", "Scenario", "ScenarioResult", "WorkloadError", "run_requests", "run_scenario"]
