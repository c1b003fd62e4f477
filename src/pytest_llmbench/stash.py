"""The gate session's key on ``pytest.Config.stash``. The other per-session keys live with the type they hold
(``config.CONFIGS``, ``registry.REGISTRY``, ``records.results.RESULTS``), as pytest's own modules keep theirs:
a key here typed by a higher package would make this foundation module import it."""

from __future__ import annotations

from typing import Any

import pytest

#: The gate session (baselines + verdicts); see pytest_llmbench.gate.session. ``Any``: the gate reads
#: fixtures.py, which reads this key.
GATE = pytest.StashKey[Any]()
