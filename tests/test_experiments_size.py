"""experiments/ keeps what supports a claim, not bulk (issue 54: 24 MB committed, 148 build and server logs and
7 generated report.html pages). A log is kept whole but xz-compressed once it is large (``xz -dc X.log.xz``
reads it), and a results folder's report.html is dropped unless a claim names it:
``python -m pytest_llmbench report DIR`` writes it again from the folder's results.jsonl."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT / "experiments"
LOG_LIMIT = 64 * 1024  # a tail of a few hundred lines stays readable in place; a whole server log does not


def _mentioned() -> set[Path]:
    """Every experiments/ path a document or script of the repository names (as tests/test_perf_links.py reads them)."""
    texts = [
        *ROOT.glob("*.md"),
        *(ROOT / "docs").rglob("*.md"),
        *(p for p in PERF.rglob("*") if p.suffix in {".md", ".py", ".sh"} and "data" not in p.relative_to(PERF).parts),
    ]
    found = set()
    for f in texts:
        for m in re.finditer(r"(?<![\w/.:$-])experiments/[\w./-]*[\w/]", f.read_text(errors="replace")):
            found.add((ROOT / m.group(0)).resolve())
    return found


def test_large_logs_under_experiments_are_compressed():
    large = [
        f"{p.relative_to(ROOT)} ({p.stat().st_size // 1024} KiB)"
        for p in sorted(PERF.rglob("*.log"))
        if p.stat().st_size > LOG_LIMIT
    ]
    assert large == [], "logs to compress with `xz -9` (kept whole, read with xz -dc):\n" + "\n".join(large)


def test_generated_report_pages_are_kept_only_where_a_claim_names_them():
    named = _mentioned()
    pages = [p for p in sorted(PERF.rglob("report.html")) if p.resolve() not in named]
    assert [str(p.relative_to(ROOT)) for p in pages] == [], (
        "generated pages no claim names (python -m pytest_llmbench report DIR writes them again)"
    )


def test_the_cited_report_page_is_still_there():
    """The one page a claim cites (experiments/report/headline_session.out.md) stays: the checks above must not
    pass by having dropped it."""
    assert (PERF / "data" / "report" / "headline_session" / "report.html").resolve() in _mentioned()
    assert (PERF / "data" / "report" / "headline_session" / "report.html").is_file()
