"""The GPU's clocks, power, throttle reasons, memory and XID errors through NVML (nvidia-ml-py).

These tell a slower host from a slower build: the same build at a lower SM clock, or power-capped, is the
card's doing. Read only where ``pynvml`` imports and NVML finds a GPU; anywhere else ``open_gpus()`` is
None and nothing is recorded. The tests drive this with a fake NVML module, which checks the shape of the
readings only, not that a real driver answers this way (the GPU runners do that).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any


class Gpus:
    """NVML handles for the visible GPUs; ``sample()`` is one reading of each as ``gpu<i>.<quantity>``."""

    def __init__(self, nvml: ModuleType | Any, handles: Sequence[Any]) -> None:
        self.nvml, self.handles = nvml, list(handles)
        self.xid_events = 0
        self._events = None
        try:
            self._events = nvml.nvmlEventSetCreate()
            for h in self.handles:
                nvml.nvmlDeviceRegisterEvents(h, nvml.nvmlEventTypeXidCriticalError, self._events)
        except Exception:  # XID events are not supported everywhere (MIG, some drivers): clocks still are
            self._events = None

    def _xids(self) -> int:
        n = 0
        while self._events is not None:
            try:
                self.nvml.nvmlEventSetWait(self._events, 0)
            except Exception:  # NVML_ERROR_TIMEOUT: no event waiting
                break
            n += 1
        self.xid_events += n
        return n

    def sample(self) -> dict[str, float]:
        nv, out = self.nvml, {}
        for i, h in enumerate(self.handles):
            p = f"gpu{i}."
            out[p + "sm_clock_mhz"] = float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
            out[p + "mem_clock_mhz"] = float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))
            out[p + "power_w"] = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
            out[p + "throttle_reasons"] = float(nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
            out[p + "memory_used_gib"] = nv.nvmlDeviceGetMemoryInfo(h).used / 2**30
            out[p + "utilization"] = float(nv.nvmlDeviceGetUtilizationRates(h).gpu)
        out["gpu.xid_events"] = float(self._xids())
        return out

    def close(self) -> None:
        try:
            if self._events is not None:
                self.nvml.nvmlEventSetFree(self._events)
            self.nvml.nvmlShutdown()
        except Exception:
            pass


def open_gpus(module: ModuleType | Any | None = None) -> Gpus | None:
    """The visible GPUs, or None where pynvml is missing or finds no GPU (a CPU runner)."""
    nvml: Any = module
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return None
        nvml = pynvml
    try:
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
    except Exception:  # NVMLError: no driver or no device
        return None
    if not count:
        nvml.nvmlShutdown()
        return None
    return Gpus(nvml, [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)])
