"""A CREATE's query is analysed by Spark once, in a cell too (issue 37): the definition a cell's check builds
(``statements.definition.build_definition``: Spark's analysis of the query, the loads of its sources) is the plan
its handler hands to the apply, which writes it. Before, a cell built each CREATE twice, in its check and in its
apply (a cell of two CREATEs: 4 builds, now 2). DROP's check hands its plan (the catalog's listing) on the same way.

A plan is not reused where the statements before it in the cell may have made it stale: a CREATE over a source an
earlier statement changes is built again when applied, and DROP lists the catalog again after an earlier change
(a reader created earlier in the cell is found)."""

from __future__ import annotations

import itertools
import sys

import pytest

from mt_magic.errors import CellNotAppliedError
from mt_magic.runtime.cell import execute_cell
from mt_magic.runtime.statements import definition
from mt_magic.runtime.statements import drop as drop_statement
from mt_magic.sql import parse_cell
from mt_magic.sql.names import TableName

_names = itertools.count()


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table of each CREATE whose definition is built while the test runs, in order."""
    original = definition.build_definition
    seen: list[str] = []

    def counting(ws, stmt, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(stmt.name.name)
        return original(ws, stmt, *args, **kwargs)

    for module in list(sys.modules.values()):  # each module holding it by name (``from … import build_definition``)
        if getattr(module, "__name__", "").startswith("mt_magic.") and vars(module).get("build_definition") is original:
            monkeypatch.setattr(module, "build_definition", counting)
    return seen


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table of each DROP plan read (one listing of the catalog each) while the test runs."""
    original = drop_statement.plan_drop
    seen: list[str] = []

    def counting(ws, name, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(name.rsplit(".", 1)[-1])
        return original(ws, name, *args, **kwargs)

    monkeypatch.setattr(drop_statement, "plan_drop", counting)
    return seen


@pytest.fixture
def src(spark, mt) -> None:  # type: ignore[no-untyped-def]
    spark.sql("CREATE TABLE src (k INT, v INT) USING iceberg")
    spark.sql("INSERT INTO src VALUES (1, 5), (2, 6)")


def _cell(mt, text: str) -> None:  # type: ignore[no-untyped-def]
    for result in execute_cell(mt, parse_cell(text)):
        if result.refresh is not None:
            result.refresh.result(timeout=300)


def _create(name: str, query: str = "SELECT k, v FROM src") -> str:
    return f"CREATE MATERIALIZED TABLE {name} FRESHNESS = INTERVAL '1' MINUTE AS {query}"


def test_each_create_of_a_cell_is_analysed_once(mt, src, builds) -> None:
    _cell(mt, _create("alone"))
    assert builds == ["alone"]  # a cell of one statement: checked and applied as a single statement
    builds.clear()
    _cell(mt, f"{_create('first')};\n{_create('second', 'SELECT k, sum(v) AS total FROM src GROUP BY k')}")
    assert builds == ["first", "second"]  # before: first, second (the check), first, second (the apply)
    builds.clear()
    _cell(mt, f"{_create('base')};\n{_create('over_base', 'SELECT k FROM base')}")
    assert builds == ["base", "over_base"]  # over_base reads a table the cell creates: built by its apply only


def test_a_create_over_a_source_changed_earlier_in_the_cell_is_analysed_again(spark, mt, src, builds) -> None:
    """The check's definition of ``wide`` has its source's columns before the cell; the apply's has ``w`` too (its
    rows come with ``changing``'s next refresh)."""
    _cell(mt, _create("changing"))
    builds.clear()
    _cell(
        mt,
        "CREATE OR ALTER MATERIALIZED TABLE changing AS SELECT k, v, v * 2 AS w FROM src;\n"
        + _create("wide", "SELECT * FROM changing"),
    )
    assert [c for c in spark.table("wide").columns if not c.startswith("_")] == ["k", "v", "w"]
    assert builds == ["wide", "wide"]


def test_a_drop_of_a_cell_lists_the_catalog_once_unless_an_earlier_statement_changed_it(mt, src, listings) -> None:
    _cell(mt, _create("old"))
    _cell(mt, f"DROP MATERIALIZED TABLE old;\n{_create('old', 'SELECT k FROM src')}")
    assert listings == ["old"]  # before: its check's and its apply's
    reader = f"reader_{next(_names)}"
    with pytest.raises(CellNotAppliedError, match=r"read\(s\) it"):  # the apply's listing finds the new reader
        _cell(mt, f"{_create(reader, 'SELECT k FROM old')};\nDROP MATERIALIZED TABLE old")
    assert listings == ["old", "old", "old", reader]  # the check's, the apply's, and the undo's drop of the reader
    ws = mt.workspace
    assert ws.catalog.exists(ws.qualify(TableName("old"))) and not ws.catalog.exists(ws.qualify(TableName(reader)))
