"""Issue 54: ``pytest benches/ -m cpu --collect-only`` ended with syrupy's "Re-run pytest with
--snapshot-update to delete unused snapshots", advice that deletes the shipped BFCL pass/fail set."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

BENCHES = Path(__file__).resolve().parents[2] / "benches"
SNAPSHOT = BENCHES / "__snapshots__" / "test_quality_cpu.ambr"

BFCL = """
import pytest

@pytest.mark.parametrize("config", ["smol-nospec"])
def test_bfcl_subset(config, snapshot):
    assert snapshot == {}
"""


def _benches(pytester: pytest.Pytester) -> Path:
    """benches/'s conftest and its shipped snapshot, beside a test of the snapshot's name."""
    shutil.copy(BENCHES / "conftest.py", pytester.path / "conftest.py")
    pytester.makepyfile(test_quality_cpu=BFCL)
    (pytester.path / "__snapshots__").mkdir()
    return Path(shutil.copy(SNAPSHOT, pytester.path / "__snapshots__" / SNAPSHOT.name))


def test_collect_only_gives_no_hint_that_deletes_the_shipped_snapshot(pytester: pytest.Pytester):
    shipped = _benches(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*1 test collected*"])
    assert "--snapshot-update" not in result.stdout.str() and "unused." not in result.stdout.str()
    assert shipped.read_text() == SNAPSHOT.read_text()


def test_a_run_that_executes_the_test_still_reports_a_changed_snapshot(pytester: pytest.Pytester):
    """Only collect-only is quiet: a run keeps syrupy's checks (here the stored set differs from ``{}``)."""
    _benches(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*snapshot failed*"])
