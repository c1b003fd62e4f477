"""report.html of real runs as a reader sees it (headless Chromium): rows of one line or two, never a page
wider than the window (issue 54's screenshots: ~170 px comparison rows, a table off the page's edge)."""

from __future__ import annotations

import shutil

import pytest

from pytest_llmbench.records.folder import read_folder
from pytest_llmbench.report import html

from .headless import Chromium, require_chromium
from .test_surfaces import DATA, UNDERPOWERED

ROW_HEIGHTS = """Array.from(document.querySelectorAll('#comparisons-table tbody tr')).map(tr =>
  tr.getBoundingClientRect().height)"""
WHY = """Array.from(document.querySelectorAll('#comparisons-table tbody td.why')).map(td => td.textContent.trim())"""
#: the widest box on the page (a table that runs off the page widens the document past the window)
WIDTH = "document.documentElement.scrollWidth"
WINDOW = 1400


def _page(tmp_path, source):
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    return html.write(read_folder(folder), DATA / "baselines")


def test_comparison_rows_are_short_and_say_why_they_are_inconclusive(tmp_path) -> None:
    binary = require_chromium()
    page_path = _page(tmp_path, UNDERPOWERED)
    browser = Chromium(binary)
    try:
        session, page = browser.load(page_path.as_uri(), width=WINDOW, height=900)
        heights = browser.evaluate(session, ROW_HEIGHTS)
        why = browser.evaluate(session, WHY)
        width = browser.evaluate(session, WIDTH)
    finally:
        browser.close()
    assert page.errors == []
    assert len(heights) == 3 and max(heights) <= 64, heights  # three lines (3 × 18 px + padding); 0dd9ff1: 152
    assert len(why) == 3 and all(w.startswith("underpowered; interval not clear of") for w in why)
    assert width <= WINDOW


@pytest.mark.parametrize("name", ["cpu-run-a", "compare-underpowered"])
def test_the_page_is_never_wider_than_the_window(tmp_path, name) -> None:
    binary = require_chromium()
    page_path = _page(tmp_path, DATA / name)
    browser = Chromium(binary)
    try:
        session, page = browser.load(page_path.as_uri(), width=1024, height=900)
        width = browser.evaluate(session, WIDTH)
    finally:
        browser.close()
    assert page.errors == []
    assert width <= 1024  # a wide table scrolls in its own box
