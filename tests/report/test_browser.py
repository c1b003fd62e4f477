"""report.html as a person sees it: rendered by headless Chromium from a real CPU-suite results folder.

The folder is ``data/cpu-run-a``: a trimmed copy of a real ``pytest benches/ -m cpu`` run (see
data/README.md for the command and what was trimmed). The test checks what a reader would notice:
console errors, a figure that drew nothing, a verdict table that disagrees with results.jsonl.
Chromium is Debian's package (``.ci/run`` installs it); without it the test skips, saying so.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import html

from .headless import PLOT_BOXES, Chromium, blank_fraction, require_chromium, table_rows

DATA = Path(__file__).parent / "data"
RUN = DATA / "cpu-run-a"

VERDICT_ROWS = table_rows("verdicts-table")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory):
    binary = require_chromium()
    run = tmp_path_factory.mktemp("report") / "cpu-run-a"
    shutil.copytree(RUN, run)
    page_path = html.write(read_folder(run), DATA / "baselines")
    browser = Chromium(binary)
    try:
        session, page = browser.load(page_path.as_uri(), width=1280, height=900)
        boxes = browser.evaluate(session, PLOT_BOXES)
        rows = browser.evaluate(session, VERDICT_ROWS)
    finally:
        browser.close()
    (run / "screenshot.png").write_bytes(page.png)
    return page, boxes, rows


def test_no_console_errors(rendered) -> None:
    page, _, _ = rendered
    assert page.errors == []
    assert page.png.startswith(b"\x89PNG") and page.height > 900


def test_every_plot_drew_something(rendered) -> None:
    page, boxes, _ = rendered
    assert len(boxes) >= 5
    for box in boxes:
        assert box["has_svg"], f"{box['id']}: no <svg> inside the figure"
        assert box["width"] > 300 and box["height"] > 100, f"{box['id']}: collapsed to {box}"
        white, colours = blank_fraction(page.png, box)
        assert white < 0.97 and colours > 20, f"{box['id']}: blank ({white:.1%} white, {colours} colours)"


def test_verdict_table_matches_results(rendered) -> None:
    _, _, rows = rendered
    verdicts = read_folder(RUN).verdicts()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (v["status"], v["config"], v["test_key"], v["metric"]) for v in verdicts
    ]
