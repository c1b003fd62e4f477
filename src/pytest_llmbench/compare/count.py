"""How many comparisons each selected test makes, counted from its source before any test runs.

A comparison's alpha is its family's budget over the comparisons of that family (Bonferroni, known up
front, so a test can fail the moment it is judged). Counting only the deciding metrics undercounted: every
serving ``bench.check`` becomes a comparison, and benches/test_serving_cpu.py checks three timing metrics
where two were counted (the family could spend 1.5× its budget). So the count is read from the test
function itself: each ``bench.check("<serving metric>", ...)`` with a literal name is one comparison of
that metric's family. A test whose checks name their metric in a variable cannot be read; it counts the
deciding metrics, as before, and the session says so when it makes more comparisons than counted.

A check with ``reference_cases=`` (cases measured on both arms) is a comparison too, whatever its metric's
name: its family is ``family=`` where that is a literal, else "decisions" for ``noise=PairedBootstrap(...)``
and "quality" otherwise (compare/session.py ``check_cases``). Left uncounted, each was judged at its
family's whole alpha, so k of them could fail k·alpha of the time, and the final Holm pass cannot undo a
test that already failed (issue 55).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable


def _checks(function: Callable[..., object]) -> list[ast.Call] | None:
    """The ``bench.check(...)`` calls in ``function``'s body (None: unreadable source)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "check"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "bench"
    ]


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


def case_check_family(node: ast.Call) -> str | None:
    """The family of a ``bench.check(..., reference_cases=...)`` call (None: not a per-case comparison)."""
    if _keyword(node, "reference_cases") is None:
        return None
    family = _keyword(node, "family")
    if isinstance(family, ast.Constant) and isinstance(family.value, str):
        return family.value
    noise = _keyword(node, "noise")
    called = noise.func if isinstance(noise, ast.Call) else noise
    name = called.attr if isinstance(called, ast.Attribute) else called.id if isinstance(called, ast.Name) else ""
    return "decisions" if name == "PairedBootstrap" else "quality"


def case_checks(function: Callable[..., object] | None) -> Counter[str]:
    """Per-case comparisons (``reference_cases=``) per family in ``function``'s body."""
    calls = _checks(function) if function is not None else None
    return Counter(f for node in calls or () if (f := case_check_family(node)) is not None)


def literal_checks(function: Callable[..., object]) -> list[str] | None:
    """The literal metric names of ``bench.check(...)`` calls in ``function``'s body, per-case checks
    left out (:func:`case_checks` counts those); None: unreadable source, or a check whose name is not a
    literal."""
    calls = _checks(function)
    if calls is None:
        return None
    names: list[str] = []
    for node in calls:
        if case_check_family(node) is not None:
            continue
        first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "metric"), None)
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return None
        names.append(first.value)
    return names


def comparisons_by_family(
    function: Callable[..., object] | None,
    *,
    family_of: Callable[[str], str | None],
    fallback: Iterable[str],
) -> Counter[str]:
    """Comparisons per family that one test makes: its literal serving checks (``family_of`` gives None for
    a check that stays a baseline check), else the ``fallback`` metrics (the deciding ones), and its
    per-case checks (:func:`case_checks`)."""
    names = literal_checks(function) if function is not None else None
    if names is None:
        names = list(fallback)
    return Counter(f for name in names if (f := family_of(name)) is not None) + case_checks(function)
