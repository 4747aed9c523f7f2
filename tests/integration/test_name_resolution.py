"""One name resolution for every statement: catalog-qualified, namespace-qualified and bare names mean what they
mean in Spark, a missing namespace is an error that names it, and RENAME keeps the table's namespace."""

from __future__ import annotations

import itertools

import pytest
from shared_catalog import CATALOG

from mt_magic.errors import DefinitionError
from mt_magic.sql import parse_cell

_spaces = itertools.count()


def run(mt, cell: str):
    [statement] = parse_cell(cell)
    result = mt.execute(statement)
    if result.refresh is not None:
        result.refresh.result(timeout=300)
    return result


@pytest.fixture
def sales(spark, mt) -> str:
    """A second namespace, not the service's default, holding a source and one materialized table."""
    namespace = f"sales{next(_spaces)}"
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{namespace}")
    spark.sql(f"CREATE TABLE {CATALOG}.{namespace}.orders (k INT, v INT) USING iceberg")
    spark.sql(f"INSERT INTO {CATALOG}.{namespace}.orders VALUES (1, 2)")
    run(
        mt,
        f"CREATE MATERIALIZED TABLE {CATALOG}.{namespace}.totals FRESHNESS = INTERVAL '1' MINUTE "
        f"AS SELECT k, sum(v) AS v FROM {CATALOG}.{namespace}.orders GROUP BY k",
    )
    return namespace


@pytest.mark.parametrize("written", ["{ns}", f"{CATALOG}.{{ns}}"])
def test_show_in_a_namespace_reads_it_bare_or_catalog_qualified(mt, sales, written: str) -> None:
    shown = run(mt, f"SHOW MATERIALIZED TABLES IN {written.format(ns=sales)}")
    assert [row[0] for row in shown.listing.rows] == [f"{CATALOG}.{sales}.totals"]
    assert shown.message == f"1 materialized table(s) in {sales}."


def test_show_in_a_namespace_that_does_not_exist_says_so(mt) -> None:
    with pytest.raises(DefinitionError, match="Namespace 'nosuchns' does not exist in catalog 'mtit'"):
        run(mt, "SHOW MATERIALIZED TABLES IN nosuchns")
    with pytest.raises(DefinitionError, match=f"'{CATALOG}.nosuchns' does not exist"):
        run(mt, f"SHOW MATERIALIZED TABLES FROM {CATALOG}.{CATALOG}.nosuchns")


def test_rename_keeps_the_tables_namespace_unless_the_new_name_says_otherwise(spark, mt, sales) -> None:
    run(mt, f"ALTER MATERIALIZED TABLE {CATALOG}.{sales}.totals RENAME TO totals2")
    assert spark.catalog.tableExists(f"{CATALOG}.{sales}.totals2")
    assert not spark.catalog.tableExists(f"{CATALOG}.{mt.workspace.default_namespace}.totals2")
    run(mt, f"ALTER MATERIALIZED TABLE {sales}.totals2 RENAME TO {mt.workspace.default_namespace}.moved")
    assert spark.catalog.tableExists(f"{CATALOG}.{mt.workspace.default_namespace}.moved")


@pytest.mark.parametrize(
    ("cell", "position"),
    [
        (
            "CREATE MATERIALIZED TABLE broken FRESHNESS = INTERVAL '1' MINUTE\nAS SELECT k,\n  FROM orders WHERE",
            (3, 15),
        ),
        ("ALTER MATERIALIZED TABLE totals AS\nSELECT k FROM", (2, 10)),
    ],
)
def test_a_query_sqlglot_cannot_read_is_refused_at_its_cell_position(spark, mt, sales, cell, position) -> None:
    """Found at run time (the grammar does not read the body), the error still points into the cell."""
    from mt_magic.sql.errors import QueryAnalysisError

    mt.workspace.spark.sql(f"USE {CATALOG}.{sales}")
    qualified = cell.replace("TABLE totals", f"TABLE {CATALOG}.{sales}.totals")
    with pytest.raises(QueryAnalysisError) as info:
        run(mt, qualified)
    assert (info.value.position.line, info.value.position.column) == position, str(info.value)
