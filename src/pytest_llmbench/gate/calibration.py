"""Machine calibration for timing baselines: a fixed CPU workload timed at session start.

A runner profile names the CPU model and core count, not the speed timing numbers depend on (a fresh
``cpu-amd-epyc-2c`` ran the CPU suite 2.7× faster than the one that recorded the baselines; a busy
neighbour on a shared core halves it). So every timing entry records the calibration of the machine
that measured it (``provenance.calibration``), and a timing check on a machine whose calibration
differs by more than ``TOLERANCE`` is reported as not comparable — "re-record on this machine or use
a reference run" — instead of as a regression or an improvement (benches/perf/rerun_cpu.out.md has
the measurements behind the tolerance).

The workload is the same kind of work as CPU decoding: float32 matrix–vector products over a matrix
larger than the caches (memory-bound, like a small model's decode step), on the threads numpy uses.
The score is GB/s of matrix read, the median of ``REPEATS`` timed rounds.
"""

from __future__ import annotations

import time

import numpy as np

TOLERANCE = 0.25  # a ratio outside [1/1.25, 1.25] is another machine (state)
REPEATS = 7
_ROWS, _COLS, _PER_ROUND = 4096, 4096, 8  # 64 MiB of float32: beyond the L3 of the runners we know


def measure(repeats: int = REPEATS) -> float:
    """GB/s of matrix read by float32 GEMV (median of ``repeats`` rounds; well under a second)."""
    rng = np.random.default_rng(0)
    a = rng.random((_ROWS, _COLS), dtype=np.float32)
    x = rng.random(_COLS, dtype=np.float32)
    a @ x  # warm: page in the matrix
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(_PER_ROUND):
            x = (a @ x) / np.float32(_COLS)
        rates.append(a.nbytes * _PER_ROUND / (time.perf_counter() - t0) / 1e9)
    return round(float(np.median(rates)), 3)


def comparable(recorded: float | None, now: float | None, tolerance: float = TOLERANCE) -> tuple[bool, float | None]:
    """(whether a baseline recorded at ``recorded`` can be judged on a machine at ``now``, now/recorded);
    an entry without a calibration (recorded before it existed) is judged as before."""
    if not recorded or not now:
        return True, None
    ratio = now / recorded
    return (1 / (1 + tolerance) <= ratio <= 1 + tolerance), ratio
