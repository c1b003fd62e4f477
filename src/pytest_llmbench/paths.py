"""Where the plugin keeps what it makes or finds on this machine (derived models, slot folders, data)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$LLMBENCH_CACHE``, else ``~/.cache/pytest-llmbench``."""
    return Path(os.environ.get("LLMBENCH_CACHE", Path.home() / ".cache" / "pytest-llmbench"))
