"""A line that must reach the terminal (and so a CI log) now: pull progress, a comparison's progress, a
clean-up of leftover containers. Inside a test pytest captures fd 1 and 2, so a plain print waits for a
failure to be shown; here the capture is suspended for the line, as the comparison's plan line does. And the
aligned text table the terminal summaries print. Imports nothing of the package: launchers, compare, the
report and the CLI all use it.
"""

from __future__ import annotations

import sys
from typing import Any


def tell(config: Any, line: str, **markup: bool) -> None:
    """Write ``line`` on the terminal past pytest's capture (``markup``: the terminal writer's, e.g.
    ``yellow=True``); without a session's terminal reporter (the bisect and image commands, an xdist worker)
    on stderr."""
    tr = config.pluginmanager.get_plugin("terminalreporter") if config is not None else None
    if tr is None:
        print(line, file=sys.stderr, flush=True)
        return
    capman = config.pluginmanager.get_plugin("capturemanager")
    if capman is None:
        tr.write_line(line, **markup)
        return
    with capman.global_and_fixture_disabled():
        tr.write_line(line, **markup)


def aligned(rows: list[list[str]], header: list[str], right: set[int]) -> str:
    """A text table: columns padded to their widest cell, those in ``right`` right-aligned, a rule under the
    header."""
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()

    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)])
