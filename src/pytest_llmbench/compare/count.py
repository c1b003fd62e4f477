"""How many comparisons each selected test makes, counted from its source before any test runs.

A comparison's alpha is its family's budget over the comparisons of that family (Bonferroni, known up
front, so a test can fail the moment it is judged). Counting only the deciding metrics undercounted: every
serving ``bench.check`` becomes a comparison, and benches/test_serving_cpu.py checks three timing metrics
where two were counted (the family could spend 1.5× its budget). So the count is read from the test
function itself: each ``bench.check("<serving metric>", ...)`` with a literal name is one comparison of
that metric's family. A test whose checks name their metric in a variable cannot be read; it counts the
deciding metrics, as before, and the session says so when it makes more comparisons than counted.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable


def literal_checks(function: Callable[..., object]) -> list[str] | None:
    """The literal metric names of ``bench.check(...)`` calls in ``function``'s body (None: unreadable
    source, or a check whose name is not a literal)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    names: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Name) and owner.id == "bench"):
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
    a check that stays a baseline check), else the ``fallback`` metrics (the deciding ones)."""
    names = literal_checks(function) if function is not None else None
    if names is None:
        names = list(fallback)
    return Counter(f for name in names if (f := family_of(name)) is not None)
