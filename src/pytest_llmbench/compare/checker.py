"""The comparison as a checker (hookspec ``pytest_llmbench_check``): a ``bench.check`` of a compared config is
judged reference vs candidate where the comparison can judge it, and left to the next checker otherwise.

Why a plugin of its own: ``bench.check`` walks the checkers in hook order instead of asking each session by
name, so the comparison, the stored-baseline gate and a user's own checker are peers; this one runs first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_llmbench.gate.types import Check


class ComparisonChecker:
    """Judges, on a compared config: per-case values given with the reference arm's (``reference_cases``),
    and a metric of the last ``bench.run`` the comparison decides (``CompareSession.judges``)."""

    def __init__(self, session: Any) -> None:
        self.session = session  # compare/session.py's CompareSession (not imported: it registers this)

    @pytest.hookimpl(tryfirst=True)
    def pytest_llmbench_check(self, bench: Any, check: Check) -> Any:
        session = self.session
        if session.pairs.get(bench.config_name) is None:
            return None  # not a compared config: the stored baseline judges it
        if check.cases is not None and check.reference_cases is not None:
            return session.check_cases(
                bench,
                check.metric,
                check.cases,
                check.reference_cases,
                noise=check.noise,
                direction=check.direction,
                family=check.family,
                **check.sizes(),
            )
        if session.judges(bench, check.metric, **check.sizes()):
            return session.check(bench, check.metric)
        return None
