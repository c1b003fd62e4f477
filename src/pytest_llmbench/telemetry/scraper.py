"""Read a server's ``/metrics`` at a fixed interval in a background thread while a scenario runs.

A reading once per scenario (server facts) cannot show a queue that built up and drained, or a KV cache
that filled mid-run; a timeline can. The thread has its own HTTP client (the control-plane client is not
shared across threads) and reads one sample at the start, one every ``interval_s`` and one at the end,
so even a scenario shorter than the interval has a window. Its cost on the timing it explains: ~0.65 ms of
CPU per sample, both sides, against llama-server (experiments/telemetry/scrape_cpu.out.md), so at the default
1 s at most ~0.07% of one core, a bound on the TPOT it can cost; an engine with many more series parses longer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Self

import httpx

from pytest_llmbench.engines.base import parse_prometheus, sum_series
from pytest_llmbench.telemetry.timeline import Kind, Timeline
from pytest_llmbench.transport.http import bearer

if TYPE_CHECKING:
    from pytest_llmbench.server import LLMServer

#: vocabulary word → (the engine's Prometheus name, gauge or counter); see ``Engine.metric_names``.
Names = Mapping[str, tuple[str, Kind]]
Fetch = Callable[[], Mapping[str, float] | None]
Extra = Callable[[], Mapping[str, float]]


def http_fetch(base_url: str, headers: Mapping[str, str] | None = None, timeout_s: float = 2.0) -> Fetch:
    """A fetch of ``base_url``/metrics with a client of its own; None on any failure."""
    client = httpx.Client(base_url=base_url, headers=dict(headers or {}), timeout=timeout_s)

    def fetch() -> Mapping[str, float] | None:
        try:
            r = client.get("/metrics")
        except httpx.HTTPError:
            return None
        return parse_prometheus(r.text) if r.status_code == 200 else None

    fetch.close = client.close  # type: ignore[attr-defined]
    return fetch


def mapped(raw: Mapping[str, float], names: Names) -> dict[str, tuple[float, Kind]]:
    """The engine's series in the vocabulary, summed over label sets; absent series left out."""
    out: dict[str, tuple[float, Kind]] = {}
    for word, (prom, kind) in names.items():
        v = sum_series(dict(raw), prom)
        if v is not None:
            out[word] = (v, kind)
    return out


class Scraper:
    """``with Scraper(fetch, names, 1.0) as s: …`` then ``s.timeline``. ``extra`` adds readings that are
    not the server's (the GPU's) to each sample; an ``interval_s`` of 0 or less reads nothing."""

    def __init__(
        self, fetch: Fetch, names: Names, interval_s: float = 1.0, extra: Extra | None = None, source: str = "/metrics"
    ) -> None:
        self.fetch, self.names, self.extra = fetch, names, extra
        self.timeline = Timeline(interval_s, source=source)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._first: dict[str, float] = {}
        self._prev: tuple[float, dict[str, float]] | None = None

    def sample(self) -> None:
        now = time.monotonic()
        raw = self.fetch()
        row: dict[str, float] = {"t": now - self._t0}
        counters: dict[str, float] = {}
        if raw is None:
            self.timeline.errors += 1
        else:
            for word, (v, kind) in mapped(raw, self.names).items():
                if kind == "gauge":
                    row[word] = v
                else:
                    counters[word] = v
            if self._prev is not None:
                t_prev, prev = self._prev
                dt = now - t_prev
                for word, v in counters.items():
                    if word in prev and dt > 0:
                        row[word] = max(0.0, v - prev[word]) / dt  # a counter reset reads as no progress
            for word, v in counters.items():
                self._first.setdefault(word, v)
                self.timeline.deltas[word] = max(0.0, v - self._first[word])
            self._prev = (now, counters)
        if self.extra is not None:
            row.update(self.extra())
        self.timeline.samples.append(row)

    def _loop(self) -> None:
        while not self._stop.wait(self.timeline.interval_s):
            self.sample()

    def start(self) -> Self:
        return self.__enter__()

    def stop(self) -> Timeline:
        self.__exit__(None, None, None)
        return self.timeline

    def __enter__(self) -> Self:
        if self.timeline.interval_s > 0 and self._thread is None:
            self._t0 = time.monotonic()
            self.sample()
            self._thread = threading.Thread(target=self._loop, name="llmbench-scrape", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._thread is not None and not self._stop.is_set():
            self._stop.set()
            self._thread.join()
            self.sample()  # the window's end
        close = getattr(self.fetch, "close", None)
        if close is not None:
            close()


_GPUS: list[object] = []  # the process's one NVML session: opened at the first scrape, None where no GPU


def _gpu_extra() -> Extra | None:
    from pytest_llmbench.telemetry.gpu import open_gpus

    if not _GPUS:
        _GPUS.append(open_gpus())
    gpus = _GPUS[0]
    return None if gpus is None else gpus.sample  # type: ignore[attr-defined]


def for_server(server: LLMServer, interval_s: float) -> Scraper:
    """A scraper of ``server``'s /metrics in its engine's names, with the GPUs' readings where NVML has any."""
    names = getattr(server.engine, "metric_names", None)
    if interval_s <= 0 or not names:  # switched off, or an engine that maps no names: an empty timeline
        return Scraper(lambda: None, {}, 0.0)
    fetch = http_fetch(server.base_url, bearer(server.config.api_key))
    return Scraper(fetch, names, interval_s, _gpu_extra(), source=f"{server.engine.name} /metrics")
