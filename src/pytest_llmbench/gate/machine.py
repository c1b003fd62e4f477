"""Whether a stored timing value came from this machine: a fingerprint recorded with every timing entry.

The runner profile (``cpu-amd-epyc-2c``) keys the baseline file but is coarse by design: a cloud VM may
name its CPU "AMD EPYC" whatever the generation. A timing entry therefore records the machine that
measured it (``provenance.machine``) — CPU vendor, family/model/stepping, the vector instructions the
engines dispatch on, the cores this process may use, memory, and the GPUs — and a timing check on a
machine whose fingerprint differs, or against an entry with none, is ``not comparable`` rather than a
verdict: "re-record on this machine".

Why not a speed score: a fixed numpy GEMV timed at session start (what this module measured before)
does not predict llama.cpp's decode speed. On one quiet 2-core EPYC it read 54.7, 34.6 and 26.9 GB/s
within minutes while decode held at 96–99 tok/s (experiments/stored/calibration_predicts.out.md). What does
predict a slow state is contention (another process on the cores the server needs); that is measured
during every scenario by ``pytest_llmbench.host_load``, not once at start. A short decode on the
config's own server would predict the engine perfectly, and for the same reason it cannot calibrate: it
slows down with the very change the gate is there to catch.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pytest_llmbench.gate.runner import RunnerProfile

#: Instruction sets llama.cpp, PyTorch and friends pick kernels by: a machine with another set runs other code.
ISA_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
)
KEYS = ("cpu", "isa", "cores", "memory_gib", "gpu")


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block is enough
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    except OSError:
        pass
    return info


def _memory_gib() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20)
    except OSError:
        pass
    return None


def fingerprint(profile: RunnerProfile) -> dict[str, Any]:
    """This machine, as a timing entry records it (plain values, so it diffs in review)."""
    info = _cpuinfo()
    cpu = " ".join(
        x
        for x in (
            info.get("vendor_id"),
            f"family {info['cpu family']}" if "cpu family" in info else "",
            f"model {info['model']}" if "model" in info else "",
            f"stepping {info['stepping']}" if "stepping" in info else "",
        )
        if x
    )
    flags = set((info.get("flags") or info.get("Features") or "").split())
    fp: dict[str, Any] = {
        "cpu": f"{profile.cpu_model} ({cpu})" if cpu else profile.cpu_model,
        "isa": " ".join(f for f in ISA_FLAGS if f in flags) or None,
        "cores": profile.cpu_cores,
        "memory_gib": _memory_gib(),
    }
    if profile.gpu_count:
        power = f", {profile.power_limit_w} W" if profile.power_limit_w else ""
        fp["gpu"] = f"{profile.gpu_count}× {profile.gpu_name}{power}"
    return {k: v for k, v in fp.items() if v is not None}


def differences(recorded: Mapping[str, Any] | None, now: Mapping[str, Any]) -> str | None:
    """Why an entry recorded on ``recorded`` is not comparable here, or None when it is."""
    if not recorded:
        return (
            "the entry has no machine record (recorded before timing entries carried one, or by hand): "
            "re-record it on this machine (--update-baselines or --llmbench-record N)"
        )
    diff = [f"{k} {recorded.get(k)!r} there, {now.get(k)!r} here" for k in KEYS if recorded.get(k) != now.get(k)]
    if not diff:
        return None
    return f"recorded on another machine ({'; '.join(diff)}): re-record on this machine or use a reference run"


def same_machine(recorded: Mapping[str, Any] | None, now: Mapping[str, Any]) -> bool:
    return differences(recorded, now) is None


__all__ = ["KEYS", "differences", "fingerprint", "same_machine"]
