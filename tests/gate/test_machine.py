"""The machine fingerprint a timing entry records, and what makes two of them differ."""

from __future__ import annotations

from pytest_llmbench.gate.machine import differences, fingerprint, same_machine
from pytest_llmbench.gate.runner import RunnerProfile


def test_fingerprint_names_cpu_cores_memory_and_gpus():
    fp = fingerprint(
        RunnerProfile(cpu_model="AMD EPYC", cpu_cores=2, gpu_name="NVIDIA H200", gpu_count=1, power_limit_w=700)
    )
    assert fp["cpu"].startswith("AMD EPYC") and fp["cores"] == 2 and fp["gpu"] == "1× NVIDIA H200, 700 W"
    assert isinstance(fp.get("memory_gib"), int)
    assert "gpu" not in fingerprint(RunnerProfile(cpu_model="AMD EPYC", cpu_cores=2))


def test_differences_name_each_key_and_an_entry_without_a_record_is_not_comparable():
    here = {"cpu": "AMD EPYC (AuthenticAMD family 25 model 1)", "isa": "avx avx2 fma", "cores": 2, "memory_gib": 24}
    assert same_machine(dict(here), here)
    why = differences({**here, "cores": 4, "isa": "avx avx2 fma avx512f"}, here)
    assert why.startswith("recorded on another machine (") and "cores 4 there, 2 here" in why
    assert "isa 'avx avx2 fma avx512f' there" in why and "re-record on this machine" in why
    assert "no machine record" in differences(None, here) and "no machine record" in differences({}, here)
