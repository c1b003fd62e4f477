"""Live progress for long scenarios (requests done / total, current output tok/s).

Written with pytest's output capture suspended (as live logging does), so it reaches the terminal while
the test runs instead of its captured stdout. On a terminal the line is rewritten in place on its own line and erased at the end, so pytest's own
progress output is left intact; without a terminal (CI logs) a plain line is written every 10 s, and one
at the end with the final count.
Nothing is shown for scenarios shorter than a couple of seconds.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any

SHOW_AFTER_S = 2.0
PLAIN_EVERY_S = 10.0


class Progress:
    def __init__(self, reporter: Any, label: str, total: int):
        self.reporter = reporter
        self.label = label
        self.total = total
        self.done = self.failed = self.tokens = 0
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._shown = False
        self._tty = bool(reporter is not None and getattr(reporter, "isatty", False))

    def line(self) -> str:
        elapsed = time.perf_counter() - self.t0
        rate = self.tokens / elapsed if elapsed > 0 else 0.0
        failed = f", {self.failed} failed" if self.failed else ""
        return f"[llmbench] {self.label}: {self.done}/{self.total} requests{failed}, {rate:,.0f} out tok/s, {elapsed:.0f} s"

    def update(self, record: Any) -> None:
        self.done += 1
        if record.ok:
            self.tokens += record.completion_tokens
        else:
            self.failed += 1
        if self.reporter is None:
            return
        now = time.perf_counter()
        if now - self.t0 < SHOW_AFTER_S:
            return
        if self._tty:
            with self._uncaptured():
                if not self._shown:
                    self.reporter.ensure_newline()
                self.reporter.rewrite(self.line(), erase=True)
            self._shown = True
        elif now - self._last >= PLAIN_EVERY_S:
            with self._uncaptured():
                self.reporter.write_line(self.line())
            self._last = now
            self._shown = True

    def _uncaptured(self):
        config = getattr(self.reporter, "config", None)
        capman = config.pluginmanager.getplugin("capturemanager") if config is not None else None
        return capman.global_and_fixture_disabled() if capman is not None else nullcontext()

    def close(self) -> None:
        """On a terminal the line is erased; in a log the last count is written, so a log that showed
        "3/4 requests" also shows where the scenario ended (4/4, or 3/4 when it was interrupted)."""
        if not self._shown:
            return
        with self._uncaptured():
            if self._tty:
                self.reporter.rewrite("", erase=True)
            else:
                self.reporter.write_line(self.line())
