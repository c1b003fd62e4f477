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

from pytest_llmbench.report import html
from pytest_llmbench.report.folder import read_folder

from .headless import Chromium, blank_fraction, find_chromium

DATA = Path(__file__).parent / "data"
RUN = DATA / "cpu-run-a"

BOXES = """Array.from(document.querySelectorAll('figure.plot')).map(f => {
  const svg = f.querySelector('svg'); const r = (svg || f).getBoundingClientRect();
  return {id: f.id, has_svg: !!svg, x: r.x + window.scrollX, y: r.y + window.scrollY,
          width: r.width, height: r.height};
})"""
VERDICT_ROWS = """Array.from(document.querySelectorAll('#verdicts-table tbody tr')).map(tr =>
  Array.from(tr.cells).map(td => td.textContent.trim()))"""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory):
    binary = find_chromium()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium; .ci/run installs it as root)")
    run = tmp_path_factory.mktemp("report") / "cpu-run-a"
    shutil.copytree(RUN, run)
    page_path = html.write(read_folder(run), DATA / "baselines")
    browser = Chromium(binary)
    try:
        session, page = browser.load(page_path.as_uri(), width=1280, height=900)
        boxes = browser.evaluate(session, BOXES)
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
