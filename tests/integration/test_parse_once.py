"""One CREATE parses its query once (issue 37): the query travels as a tree (``sql.query.parsed.ParsedQuery``)
through qualification, the hidden keys and the view's text, and the first refresh finds the stored text's tree.
Before, a CREATE with a join and an aggregate parsed its query 5 times (analysis, qualification, the storage
query's facts, the view's visible query, the first refresh's pinning) plus 4 parses of its ``SUM`` call; in a cell
of two statements 14 (the check built the definition too)."""

from __future__ import annotations

import itertools

import pytest
import sqlglot.parser

from mt_magic.runtime.cell import execute_cell
from mt_magic.sql import parse_cell

_runs = itertools.count()


@pytest.fixture
def parses():  # type: ignore[no-untyped-def]
    """Every text sqlglot parses while the test runs."""
    original = sqlglot.parser.Parser.parse
    seen: list[str] = []

    def counting(self, raw_tokens, sql=None):  # type: ignore[no-untyped-def]
        seen.append(sql or "")
        return original(self, raw_tokens, sql)

    sqlglot.parser.Parser.parse = counting  # type: ignore[method-assign]
    yield seen
    sqlglot.parser.Parser.parse = original  # type: ignore[method-assign]


@pytest.fixture
def sources(spark, mt) -> None:
    spark.sql("CREATE TABLE orders (k INT, c INT, v INT) USING iceberg")
    spark.sql("INSERT INTO orders VALUES (1, 1, 5), (2, 2, 6)")
    spark.sql("CREATE TABLE customers (c INT, name STRING) USING iceberg")
    spark.sql("INSERT INTO customers VALUES (1, 'a'), (2, 'b')")


def _create(name: str) -> tuple[str, str]:
    query = (
        f"SELECT o.k, c.name, sum(o.v) AS total_{next(_runs)} FROM orders o JOIN customers c ON o.c = c.c "
        "GROUP BY o.k, c.name"
    )  # a text no earlier test parsed in this process
    return f"CREATE MATERIALIZED TABLE {name} FRESHNESS = INTERVAL '1' MINUTE AS {query}", query


def _queries(parsed: list[str]) -> list[str]:
    """The parses of a whole query (the others are fragments: the SUM call's argument, read once per text)."""
    return [text for text in parsed if "FROM" in text.upper()]


def test_a_create_parses_its_query_once(mt, sources, parses) -> None:
    cell, query = _create("joined")
    [statement] = parse_cell(cell)
    result = mt.execute(statement)
    result.refresh.result(timeout=300)  # the first refresh, pinned to its snapshots, parses nothing either
    assert _queries(parses) == [query]
    assert len(parses) <= 2, parses  # and 'SUM(o.v)' once


def test_a_create_in_a_cell_parses_its_query_once(mt, sources, parses) -> None:
    cell, query = _create("in_cell")
    results = execute_cell(mt, parse_cell(f"{cell};\nALTER MATERIALIZED TABLE in_cell SUSPEND"))
    results[0].refresh.result(timeout=300)
    assert _queries(parses) == [query]  # the cell's check and the apply share it
