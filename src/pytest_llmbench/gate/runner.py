"""The runner profile: which machine a hardware-bound baseline belongs to.

A readable, stable slug — ``gpu-1xnvidia-h200-700w`` or ``cpu-amd-epyc-7b13-2c`` — so a baseline file
shows at a glance whose numbers it holds. Detection never fails: a machine without GPUs, NVML or
nvidia-smi simply gets a CPU profile.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

_NOISE_WORDS = re.compile(r"\((r|tm)\)|\b(cpu|processor|\d+-core|with radeon graphics)\b|@.*$", re.IGNORECASE)


@dataclass(frozen=True)
class RunnerProfile:
    """GPU name/count/power limit (when there are GPUs), CPU model and the cores this process may use."""

    cpu_model: str
    cpu_cores: int
    gpu_name: str | None = None
    gpu_count: int = 0
    power_limit_w: int | None = None
    name: str | None = None  # set by --runner

    @property
    def slug(self) -> str:
        if self.name:
            return self.name
        if self.gpu_count and self.gpu_name:
            power = f"-{self.power_limit_w}w" if self.power_limit_w else ""
            return f"gpu-{self.gpu_count}x{slugify(self.gpu_name)}{power}"
        return f"cpu-{slugify(self.cpu_model) or 'unknown'}-{self.cpu_cores}c"

    def as_dict(self) -> dict[str, Any]:
        d = {"profile": self.slug, "cpu": self.cpu_model, "cpu_cores": self.cpu_cores}
        if self.gpu_count:
            d.update(gpu=self.gpu_name, gpus=self.gpu_count, power_limit_w=self.power_limit_w)
        return d


def slugify(text: str) -> str:
    text = _NOISE_WORDS.sub(" ", text)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def check_name(name: str) -> str:
    """``--runner NAME``: a plain slug, because it becomes a YAML key and appears in every table."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ValueError(f"--runner {name!r}: use letters, digits, '.', '_' and '-' only")
    return name


def detect(name: str | None = None) -> RunnerProfile:
    cpu_model, cores = _cpu()
    gpu_name, count, power = _gpus()
    return RunnerProfile(
        cpu_model=cpu_model,
        cpu_cores=cores,
        gpu_name=gpu_name,
        gpu_count=count,
        power_limit_w=power,
        name=check_name(name) if name else None,
    )


def _cpu() -> tuple[str, int]:
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if not model:
        import platform

        model = platform.processor() or platform.machine() or "unknown"
    try:
        cores = len(os.sched_getaffinity(0))  # what this process may run on, not the host's total
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return model, cores


def _gpus() -> tuple[str | None, int, int | None]:
    """(name, count, power limit in W) of the GPUs this process sees; NVML first, then nvidia-smi."""
    try:
        return _gpus_nvml()
    except Exception:  # no driver, no library, no devices: fall through
        pass
    try:
        return _gpus_smi()
    except Exception:
        return None, 0, None


def _visible(indices: list[int]) -> list[int]:
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is None or not vis.strip():
        return indices if vis is None else []
    wanted = [v.strip() for v in vis.split(",")]
    return [i for i in indices if str(i) in wanted] if all(w.isdigit() for w in wanted) else indices


def _gpus_nvml() -> tuple[str | None, int, int | None]:
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    try:
        idx = _visible(list(range(pynvml.nvmlDeviceGetCount())))
        if not idx:
            return None, 0, None
        h = pynvml.nvmlDeviceGetHandleByIndex(idx[0])
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else name
        try:
            power = round(pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000)
        except Exception:
            power = None
        return name, len(idx), power
    finally:
        pynvml.nvmlShutdown()


def _gpus_smi() -> tuple[str | None, int, int | None]:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None, 0, None
    out = subprocess.run(
        [exe, "--query-gpu=index,name,power.limit", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout
    rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]
    by_index = {int(r[0]): r for r in rows if len(r) >= 3 and r[0].isdigit()}
    idx = _visible(sorted(by_index))
    if not idx:
        return None, 0, None
    row = by_index[idx[0]]
    try:
        power = round(float(row[2]))
    except ValueError:  # "[N/A]"
        power = None
    return row[1], len(idx), power
