"""The NVML reading's shape, with a fake NVML module: it checks names and units only, not a real driver."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_llmbench.telemetry.gpu import open_gpus


class FakeNvml:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, nvmlEventTypeXidCriticalError = 1, 2, 8

    def __init__(self, count: int = 1, xids: int = 0) -> None:
        self.count, self.xids, self.shut = count, xids, False

    def nvmlInit(self): ...
    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlEventSetCreate(self):
        return "events"

    def nvmlDeviceRegisterEvents(self, h, kind, events): ...
    def nvmlEventSetFree(self, events): ...
    def nvmlEventSetWait(self, events, ms):
        if not self.xids:
            raise TimeoutError
        self.xids -= 1

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1980 if which == 1 else 2619

    def nvmlDeviceGetPowerUsage(self, h):
        return 650_000

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        return 4

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(used=2 * 2**30)

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=97)


def test_one_reading_per_gpu_in_units():
    gpus = open_gpus(FakeNvml(count=2, xids=1))
    assert gpus is not None
    s = gpus.sample()
    assert s["gpu1.sm_clock_mhz"] == 1980 and s["gpu0.mem_clock_mhz"] == 2619
    assert s["gpu0.power_w"] == 650 and s["gpu0.memory_used_gib"] == 2 and s["gpu0.throttle_reasons"] == 4
    assert s["gpu.xid_events"] == 1 and gpus.sample()["gpu.xid_events"] == 0


def test_no_gpu_is_none_and_shuts_nvml_down():
    fake = FakeNvml(count=0)
    assert open_gpus(fake) is None and fake.shut
