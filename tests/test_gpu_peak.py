"""Peak GPU memory sampling, with a reader standing in for NVML (this machine has no GPU)."""

import itertools
import time

from pytest_llmbench.gpu_peak import PeakMemory


def test_peak_is_the_highest_total_seen_over_the_servers_gpus():
    readings = itertools.chain(
        [{"0": 40_000_000_000, "1": 3_000_000_000}, {"0": 44_500_000_000, "1": 3_000_000_000}],
        itertools.repeat({"0": 44_300_000_000, "1": 3_000_000_000}),
    )
    with PeakMemory(["0", "1"], interval_s=0.01, read=lambda ids: (next(readings), "fake")) as peak:
        time.sleep(0.05)
    assert peak.gb == 47.5 and peak.samples >= 3


def test_no_gpus_or_no_readings_give_none():
    with PeakMemory([]) as peak:
        pass
    assert peak.gb is None and peak.samples == 0
    with PeakMemory(["0"], interval_s=0.01, read=lambda ids: (None, None)) as peak:
        time.sleep(0.03)
    assert peak.gb is None
