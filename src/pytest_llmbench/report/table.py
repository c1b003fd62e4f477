"""The per-scenario table printed at the end of a session, read back from results.jsonl.

Reading the files (rather than in-memory objects) keeps one source of truth and works the same under
pytest-xdist, where the scenarios ran in worker processes.
"""

from __future__ import annotations

from pathlib import Path

from pytest_llmbench.records.results import iter_records, ok_of_planned
from pytest_llmbench.tell import aligned

COLUMNS = (
    ("config", "config", "{}"),
    ("scenario", "scenario", "{}"),
    ("ok/n", None, "{}"),
    ("out tok/s", "output_throughput", "{:,.1f}"),
    ("req/s", "request_throughput", "{:.2f}"),
    ("TTFT med ms", "median_ttft_ms", "{:,.1f}"),
    ("TTFT p99 ms", "p99_ttft_ms", "{:,.1f}"),
    ("TPOT med ms", "median_tpot_ms", "{:.2f}"),
    ("ITL p99 ms", "p99_itl_ms", "{:.2f}"),
    ("accept len", "accept_length", "{:.2f}"),
)


def scenario_table(results_dir: Path, session: str | None = None) -> str:
    """One row per scenario of the folder (of one session's, given its id)."""
    rows = []
    for obj in iter_records(results_dir, "scenario", session=session):
        m = obj.get("metrics") or {}
        cells = []
        for title, key, spec in COLUMNS:
            if title == "ok/n":
                cells.append(ok_of_planned(obj))
            elif key in ("config", "scenario"):
                cells.append(str(obj.get(key) or "-"))
            else:
                v = m.get(key)
                if key == "accept_length" and v is not None and m.get("accept_length_se") is not None:
                    cells.append(f"{v:.2f}±{m['accept_length_se']:.2f}")
                else:
                    cells.append(spec.format(v) if isinstance(v, (int, float)) else "-")
        rows.append(cells)
    if not rows:
        return ""
    return aligned(rows, [c[0] for c in COLUMNS], right=set(range(2, len(COLUMNS))))
