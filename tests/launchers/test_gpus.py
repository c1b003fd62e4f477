"""GPU assignment: visible GPUs from option/env/CUDA_VISIBLE_DEVICES, disjoint slices per xdist worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmbench.config import ServerConfig
from pytest_llmbench.launchers import gpus
from pytest_llmbench.models import ModelRef


def cfg(name: str, n: int) -> ServerConfig:
    return ServerConfig(name=name, engine="sglang", model=ModelRef("hub", "org/m"), source=Path("gpu.yaml"), gpus=n)


class FakeConfig:
    def __init__(self, **opts):
        self.opts = opts

    def getoption(self, name, default=None):
        return self.opts.get(name, default)


def test_visible_precedence():
    env = {"LLMBENCH_GPUS": "4,5", "CUDA_VISIBLE_DEVICES": "6"}
    assert gpus.visible_gpus(FakeConfig(llmbench_gpus="0, 1"), env) == ("0", "1")
    assert gpus.visible_gpus(FakeConfig(), env) == ("4", "5")
    assert gpus.visible_gpus(None, {"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b"}) == ("GPU-a", "GPU-b")
    assert gpus.visible_gpus(None, {"CUDA_VISIBLE_DEVICES": ""}) == (), "empty CUDA_VISIBLE_DEVICES = no GPU"
    assert gpus.visible_gpus(None, {}, detect=False) == ()


def test_workers_get_disjoint_slices():
    visible = tuple(str(i) for i in range(8))
    slices = [gpus.worker_gpus(visible, k, 4) for k in range(4)]
    assert slices == [("0", "1"), ("2", "3"), ("4", "5"), ("6", "7")]
    picks = [gpus.pick(cfg(f"c{k}", 2), visible, k, 4) for k in range(4)]
    assert len({g for p in picks for g in p}) == 8, "no GPU is given to two workers"
    assert gpus.pick(cfg("one", 1), visible, 3, 4) == ("6",)
    assert gpus.pick(cfg("cpu", 0), visible, 0, 4) == ()


def test_without_xdist_first_gpus(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("LLMBENCH_GPUS", "2,3,5")
    assert gpus.assign_gpus(FakeConfig(), cfg("a", 2)) == ("2", "3")


def test_assign_under_simulated_xdist_workers(monkeypatch):
    got = {}
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
        got[worker] = gpus.assign_gpus(FakeConfig(llmbench_gpus="0,1,2,3"), cfg("a", 2))
    assert got == {"gw0": ("0", "1"), "gw1": ("2", "3")}


def test_too_many_gpus_errors():
    with pytest.raises(gpus.GPUAssignmentError, match=r"config big \(gpu.yaml\) needs 4 GPU\(s\), this machine has 2"):
        gpus.pick(cfg("big", 4), ("0", "1"))
    with pytest.raises(gpus.GPUAssignmentError, match=r"worker gw1 has 1 .* run with -n 1 or fewer"):
        gpus.pick(cfg("two", 2), ("0", "1"), 1, 2)
    with pytest.raises(gpus.GPUAssignmentError, match="worker gw2 has 0"):
        gpus.pick(cfg("one", 1), ("0", "1"), 2, 3)


def test_check_gpu_requests_at_collection(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    errors = gpus.check_gpu_requests(FakeConfig(), [cfg("a", 1), cfg("b", 4), cfg("c", 0)], ("0", "1"))
    assert errors == ["config b (gpu.yaml) needs 4 GPU(s), this machine has 2 ['0', '1']"]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    errors = gpus.check_gpu_requests(FakeConfig(), [cfg("a", 1), cfg("d", 2)], ("0", "1"))
    assert errors == [
        "config d needs 2 GPU(s) but each of 2 xdist workers gets 1 of the 2 GPUs; run with -n 1 or fewer"
    ]
    assert gpus.check_gpu_requests(FakeConfig(), [cfg("c", 0)]) == []
    collect_only = FakeConfig()
    collect_only.option = type("O", (), {"collectonly": True})()
    assert gpus.check_gpu_requests(collect_only, [cfg("b", 4)], ("0",)) == [], "listing needs no GPU"


def test_add_options():
    import argparse

    class Group:
        def __init__(self):
            self.p = argparse.ArgumentParser()

        def addoption(self, *a, **kw):
            self.p.add_argument(*a, **kw)

    class Parser:
        g = Group()

        def getgroup(self, name):
            return self.g

    parser = Parser()
    gpus.add_options(parser)
    assert parser.g.p.parse_args(["--llmbench-gpus", "0,1"]).llmbench_gpus == "0,1"
