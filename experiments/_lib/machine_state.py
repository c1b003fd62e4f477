"""What else was running while a perf script measured: load average and the busiest processes."""

import subprocess
from pathlib import Path


def loadavg() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def others() -> str:
    """The busiest processes (what else was running)."""
    try:
        ps = subprocess.run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu"], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    rows = [line.split(None, 1) for line in ps.splitlines()[1:]]
    busy = [f"{c.strip()} {p}%" for p, c in rows if float(p) >= 5.0][:6]
    return ", ".join(busy) or "nothing above 5% CPU"
