"""Shipped syrupy snapshots are not offered for deletion by a run that used none of them.

``pytest --collect-only`` runs no test, so every stored snapshot reads "unused" to syrupy, which then
ends the run with "Re-run pytest with --snapshot-update to delete unused snapshots": advice that, taken,
deletes a committed pass/fail set (benches/__snapshots__, the BFCL subset's). A collect-only run has
nothing to say about snapshots, so unused detection is off for it; any run that executes tests keeps it.
"""

from __future__ import annotations

import pytest


def keep_shipped_snapshots(config: pytest.Config) -> None:
    """Call from ``pytest_configure`` (a conftest beside the snapshots): no unused-snapshot verdict, and so
    no deletion hint, where no test ran."""
    if config.option.collectonly and hasattr(config.option, "disable_unused_snapshots"):
        config.option.disable_unused_snapshots = True
