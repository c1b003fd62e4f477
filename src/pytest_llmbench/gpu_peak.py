"""Peak GPU memory while a workload runs (the Flash-Next post: "44.3 GB after load, 44.5 GB peak").

Why: memory after load (server_facts) misses what prefill of a long prompt and CUDA graphs add while
serving; the post reports both. A background thread samples the server's GPUs until the block ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Self

from pytest_llmbench.server_facts import gpu_memory_used

Reader = Callable[[Sequence[str]], "tuple[dict[str, int] | None, str | None]"]


class PeakMemory:
    """``with PeakMemory(gpu_ids) as peak: …`` then ``peak.gb``: the highest total used over the server's
    GPUs seen by any sample (None on a machine without GPU readings). Samples once on entry and exit too."""

    def __init__(self, gpu_ids: Sequence[str], *, interval_s: float = 0.25, read: Reader = gpu_memory_used):
        self.gpu_ids = tuple(gpu_ids)
        self.interval_s = interval_s
        self.read = read
        self.peak_bytes: int | None = None
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        used, _ = self.read(self.gpu_ids) if self.gpu_ids else (None, None)
        if used:
            total = sum(used.values())
            self.peak_bytes = total if self.peak_bytes is None else max(self.peak_bytes, total)
            self.samples += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> Self:
        self.sample()
        if self.gpu_ids:
            self._thread = threading.Thread(target=self._loop, name="llmbench-peak-memory", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        self.sample()

    @property
    def gb(self) -> float | None:
        return None if self.peak_bytes is None else round(self.peak_bytes / 1e9, 2)
