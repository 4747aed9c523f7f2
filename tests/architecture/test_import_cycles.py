"""Rule: no import cycles between mt_magic's modules, counting imports inside functions and under TYPE_CHECKING.

import-linter's layers contracts forbid an import up a layer, not a cycle inside one; this test walks every
module's imports with :mod:`ast` and finds the strongly connected components of the graph.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Set

from mt_modules import PACKAGE, Module, imported, modules


def cycles(graph: Mapping[str, Set[str]]) -> list[frozenset[str]]:
    """The import cycles of ``graph`` (module → the modules it imports): Tarjan's strongly connected components
    larger than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(graph.get(name, ())):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == name:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_no_import_cycles() -> None:
    found = cycles({name: imported(module) for name, module in modules().items()})
    assert not found, (
        f"import cycles: {[sorted(cycle) for cycle in found]}. Fix: move what both need into a lower module, or "
        "import one way only"
    )


def test_the_cycle_finder_sees_imports_inside_functions_and_under_type_checking() -> None:
    """The check itself, on a module written here: both kinds of hidden import are edges, and close a cycle."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from mt_magic.catalog.tables import MaterializedCatalog\n"
        "def f():\n    from mt_magic.errors import MtMagicError\n"
    )
    written = Module("mt_magic.catalog.written", PACKAGE / "catalog" / "written.py", ast.parse(source))
    assert imported(written) == {"mt_magic.catalog.tables", "mt_magic.errors"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
