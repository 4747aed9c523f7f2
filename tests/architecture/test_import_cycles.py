"""Rule: no import cycles between mt_magic's modules, counting imports inside functions and under TYPE_CHECKING.

import-linter's layers contracts forbid an import up a layer, not a cycle inside one; this test walks every
module's imports with :mod:`ast` and finds the strongly connected components of the graph.
"""

from __future__ import annotations

from mt_modules import imported, modules

KNOWN_CYCLES = {
    # Issue 51: the grant check (catalog/access.py) and the table reads (catalog/tables.py) each import the other
    # inside a function; catalog/'s owner breaks it by moving the shared helper into one of them.
    frozenset({"mt_magic.catalog.access", "mt_magic.catalog.tables"}),
    # Issue 51: the Spark session, the Connect client and the Connect server import each other inside functions;
    # runtime/spark/'s owner breaks it (the server's settings in a module of their own).
    frozenset(
        {"mt_magic.runtime.spark.connect", "mt_magic.runtime.spark.connect_server", "mt_magic.runtime.spark.session"}
    ),
}


def cycles() -> list[frozenset[str]]:
    """The import cycles (Tarjan's strongly connected components larger than one module)."""
    graph = {name: imported(module) for name, module in modules().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(graph[name]):
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


def test_no_import_cycles_but_the_known_ones() -> None:
    found = set(cycles())
    new = [sorted(cycle) for cycle in found - KNOWN_CYCLES]
    assert not new, f"import cycles: {new}. Fix: move what both need into a lower module, or import one way only"
    gone = [sorted(cycle) for cycle in KNOWN_CYCLES - found]
    assert not gone, f"these cycles are gone: {gone}. Fix: delete them from KNOWN_CYCLES"


def test_the_cycle_finder_sees_an_import_inside_a_function() -> None:
    """The check itself: ``catalog.tables`` imports ``catalog.access`` only inside a function."""
    assert "mt_magic.catalog.access" in imported(modules()["mt_magic.catalog.tables"])
