"""The arms' servers of a comparison session: ``auto`` on a runner with a second GPU set starts the reference
there and swaps the sets between a unit's halves (issue 57), and keeps the shared / per-block rule elsewhere."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_llmbench.compare import servers as servers_mod
from pytest_llmbench.compare.arms import ArmOptions
from pytest_llmbench.compare.options import CompareSettings
from pytest_llmbench.compare.power import Design
from pytest_llmbench.compare.servers import SessionServers, auto_placer

ALPHAS = {"timing": 0.01, "quality": 0.01, "decisions": 0.01}


def _settings(restart_rounds):
    return CompareSettings(
        arms=ArmOptions.parse(reference_args="-t 1"),
        design=Design(restart_rounds=restart_rounds),
        block_prompts=4,
        strict=False,
        server_mode="auto",
        alpha=0.01,
        detect={},
        ignore={},
        decide=("output_throughput",),
    )


def _servers(monkeypatch, slice_gpus, restart_rounds=None, fits=True):
    said: list[str] = []
    monkeypatch.setattr("pytest_llmbench.launchers.gpus.worker_slice", lambda config=None: slice_gpus)
    monkeypatch.setattr(servers_mod, "both_fit", lambda candidate: fits)
    monkeypatch.setattr(servers_mod, "say", lambda config, line: said.append(line))
    config = SimpleNamespace()
    s = SessionServers(config, "auto", "s", [], auto=auto_placer(config, _settings(restart_rounds), lambda: ALPHAS))
    s.starter = lambda candidate: lambda arm: pytest.fail("no server starts in this test")
    return s, said


def test_auto_on_a_runner_with_a_second_set_places_the_reference_there(monkeypatch):
    s, said = _servers(monkeypatch, ("0", "1", "2", "3"))
    candidate = SimpleNamespace(gpu_ids=("0", "1"), startup_s=62.0)
    pair = SimpleNamespace()
    arms = s.for_pair(pair, candidate)
    assert arms.sets == (("2", "3"), ("0", "1")) and arms.parallel and arms.keep_both
    assert arms.devices_for("candidate") == ("0", "1") and arms.devices_for("reference") == ("2", "3")
    assert s.mode == "disjoint-parallel"
    assert said[0].startswith("llmbench compare: auto placement on GPUs 0,1,2,3: disjoint-parallel")
    assert "start 62 s measured" in said[0]


@pytest.mark.parametrize(("fits", "mode"), [(True, "both"), (False, "per-block")])
def test_auto_without_a_second_set_keeps_both_where_they_fit_else_per_block(monkeypatch, fits, mode):
    s, said = _servers(monkeypatch, ("0", "1", "2"), fits=fits)
    arms = s.for_pair(SimpleNamespace(), SimpleNamespace(gpu_ids=("0", "1"), startup_s=60.0))
    assert arms.sets is None and arms.keep_both is fits and s.mode == mode and said == []


def test_auto_with_one_pair_for_the_session_cannot_swap_sets_and_says_so(monkeypatch):
    s, said = _servers(monkeypatch, ("0", "1"), restart_rounds=0, fits=False)
    arms = s.for_pair(SimpleNamespace(), SimpleNamespace(gpu_ids=("0",), startup_s=60.0))
    assert arms.sets is None and s.mode == "per-block"
    assert "disjoint placements refused: ini llmbench_compare_restart_rounds = 0" in said[-1]


def test_auto_on_the_cpu_keeps_both_arms_up_and_asks_no_planner(monkeypatch):
    s, said = _servers(monkeypatch, ())
    s.auto = lambda candidate: pytest.fail("auto is for GPU candidates")
    arms = s.for_pair(SimpleNamespace(), SimpleNamespace(gpu_ids=(), startup_s=2.0))
    assert arms.keep_both and arms.sets is None and s.mode == "both" and said == []
