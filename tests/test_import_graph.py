"""The package's runtime import graph runs one way: no module imports, even lazily, one that imports it.

A cycle is how gate/ knotted before (noise models → metric → cases → baselines → noise registry), and
one that "works" today breaks at the next import-order change. Imports under ``if TYPE_CHECKING:`` are
left out: they never run. The test reads the source (ast), so a lazy import inside a function counts.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

import pytest_llmbench

PACKAGE = Path(pytest_llmbench.__file__).parent


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for f in root.rglob("*.py"):
        parts = f.relative_to(root.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """{module: the package modules it imports at run time}; ``from a import b`` names module a.b when b
    is a module."""
    mods = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in mods}
            elif node.module and node.level == 0:
                for a in node.names:
                    target = f"{node.module}.{a.name}"
                    deps.add(target if target in mods else node.module)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "pytest_llmbench.gate.types" in graph  # the walk found the package
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        pytest.fail(f"import cycle: {' → '.join(e.args[1])}")
    assert len(order) == len(graph)


def test_gate_types_is_a_leaf():
    """The plain data types import nothing of the package: every gate module may use them."""
    graph = import_graph(PACKAGE)
    assert graph["pytest_llmbench.gate.types"] == set()
    assert graph["pytest_llmbench.gate.files"] == set()


def test_a_planted_cycle_is_found(tmp_path):
    """The check can fail: two modules that import each other lazily are a cycle."""
    pkg = tmp_path / "knot"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from knot.b import g\n")
    (pkg / "b.py").write_text("from knot import a\n\nif TYPE_CHECKING:\n    from knot.c import h\n")
    (pkg / "c.py").write_text("from knot.b import g\n")
    graph = import_graph(pkg)
    assert graph["knot.a"] == {"knot.b"} and graph["knot.b"] == {"knot.a"} and graph["knot.c"] == {"knot.b"}
    with pytest.raises(graphlib.CycleError):
        list(graphlib.TopologicalSorter(graph).static_order())
