"""Runner profiles: readable slugs, detection that never fails, --runner names."""

from __future__ import annotations

import os
import stat

import pytest

from pytest_llmbench.gate import runner
from pytest_llmbench.gate.runner import RunnerProfile, check_name, slugify


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("AMD EPYC 7B13 64-Core Processor", "amd-epyc-7b13"),
        ("Intel(R) Xeon(R) CPU @ 2.20GHz", "intel-xeon"),
        ("NVIDIA H200", "nvidia-h200"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "nvidia-rtx-pro-6000-blackwell-workstation-edition"),
    ],
)
def test_slugify(text, slug):
    assert slugify(text) == slug


def test_profile_slugs():
    assert RunnerProfile("AMD EPYC 7B13 64-Core Processor", 2).slug == "cpu-amd-epyc-7b13-2c"
    assert RunnerProfile("AMD EPYC", 16, "NVIDIA H200", 1, 700).slug == "gpu-1xnvidia-h200-700w"
    assert RunnerProfile("AMD EPYC", 16, "NVIDIA H200", 8, None).slug == "gpu-8xnvidia-h200"
    assert RunnerProfile("AMD EPYC", 2, name="ci-box").slug == "ci-box"


def test_detect_without_gpu_tools_is_a_cpu_profile(monkeypatch):
    def no_nvml():
        raise ImportError("no pynvml")

    monkeypatch.setattr(runner, "_gpus_nvml", no_nvml)
    monkeypatch.setenv("PATH", "/nonexistent")
    p = runner.detect()
    assert p.gpu_count == 0 and p.slug.startswith("cpu-") and p.slug.endswith(f"-{p.cpu_cores}c")
    assert p.cpu_cores == len(os.sched_getaffinity(0))


def fake_smi(tmp_path, monkeypatch, output: str):
    exe = tmp_path / "nvidia-smi"
    lines = " ".join(f"'{line}'" for line in output.splitlines())
    exe.write_text(f"#!/bin/sh\nprintf '%s\\n' {lines}\n")  # printf is a shell builtin: PATH is ours
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(runner, "_gpus_nvml", lambda: (_ for _ in ()).throw(RuntimeError("no NVML")))


def test_nvidia_smi_fallback_reads_name_count_and_power(tmp_path, monkeypatch):
    fake_smi(tmp_path, monkeypatch, "0, NVIDIA H200, 700.00\n1, NVIDIA H200, 700.00")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert runner.detect().slug == "gpu-2xnvidia-h200-700w"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert runner.detect().slug == "gpu-1xnvidia-h200-700w"


def test_unreadable_power_limit_is_left_out(tmp_path, monkeypatch):
    fake_smi(tmp_path, monkeypatch, "0, NVIDIA L4, [N/A]")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert runner.detect().slug == "gpu-1xnvidia-l4"


def test_broken_nvidia_smi_does_not_fail_detection(tmp_path, monkeypatch):
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(runner, "_gpus_nvml", lambda: (_ for _ in ()).throw(RuntimeError("no NVML")))
    assert runner.detect().slug.startswith("cpu-")


def test_runner_names_must_be_slugs():
    assert check_name("gpu-box_1.a") == "gpu-box_1.a"
    with pytest.raises(ValueError, match="letters, digits"):
        check_name("my box")
