"""GPU memory readings: used bytes for the resources record, the fullest GPU's share for the compare policy."""

from __future__ import annotations

from pytest_llmbench import server_facts

GB = 10**9


def test_used_and_share_come_from_one_reading(monkeypatch):
    monkeypatch.setattr(server_facts, "_nvml_memory", lambda ids: {"0": (2 * GB, 140 * GB), "1": (70 * GB, 140 * GB)})
    assert server_facts.gpu_memory_used(["0", "1"]) == ({"0": 2 * GB, "1": 70 * GB}, "nvml")
    assert server_facts.gpu_used_share(["0", "1"]) == 0.5  # the fullest GPU decides


def test_nvidia_smi_when_nvml_is_missing_and_nothing_without_either(monkeypatch):
    monkeypatch.setattr(server_facts, "_nvml_memory", lambda ids: None)
    monkeypatch.setattr(server_facts, "_smi_memory", lambda ids: {"0": (14 * GB, 140 * GB)})
    assert server_facts.gpu_memory(["0"]) == ({"0": (14 * GB, 140 * GB)}, "nvidia-smi")
    assert server_facts.gpu_used_share(["0"]) == 0.1
    monkeypatch.setattr(server_facts, "_smi_memory", lambda ids: None)
    assert server_facts.gpu_used_share(["0"]) is None and server_facts.gpu_memory_used(["0"]) == (None, None)
    assert server_facts.gpu_memory_used([]) == (None, None)  # a CPU config never asks
