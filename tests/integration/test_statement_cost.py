"""A statement's catalog requests do not grow with the catalog: CREATE, ALTER and REFRESH of one table make as
many requests among 200 other tables as in a catalog without them (each statement reads the tables it names and
their sources, never a listing of the catalog)."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from mt_testing import catalog_requests

from mt_magic.sql import parse_cell

_tables = itertools.count()


def counting(mt):  # type: ignore[no-untyped-def]
    """Count the REST requests the service's catalog client sends (by method)."""
    return catalog_requests(mt, lambda request: request.method)


def statements(mt, table: str) -> Counter:
    cells = [
        f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT k, count(*) AS n FROM src GROUP BY k",
        f"ALTER MATERIALIZED TABLE {table} SET FRESHNESS = INTERVAL '2' MINUTE",
        f"ALTER MATERIALIZED TABLE {table} SUSPEND",
        f"ALTER MATERIALIZED TABLE {table} RESUME",
        f"ALTER MATERIALIZED TABLE {table} REFRESH",
    ]
    with counting(mt) as counts:
        for cell in cells:
            [statement] = parse_cell(cell)
            result = mt.execute(statement)
            if result.refresh is not None:
                result.refresh.result(timeout=300)
    return counts


@pytest.fixture
def src(spark, mt) -> None:
    spark.sql("CREATE TABLE src (k INT) USING iceberg")
    spark.sql("INSERT INTO src VALUES (1), (2)")


def test_statements_cost_the_same_among_200_other_tables(spark, mt, src) -> None:
    statements(mt, "warm_up")  # first-use costs (config, the view endpoints) are not the point
    alone = statements(mt, "first")
    pyiceberg = mt.workspace.catalog.catalog
    namespace = f"crowd{next(_tables)}"
    pyiceberg.create_namespace(namespace)
    schema = spark.table("src").schema
    import pyarrow as pa

    arrow = pa.schema([pa.field(f.name, pa.int32()) for f in schema.fields])
    for index in range(200):
        pyiceberg.create_table((namespace, f"t{index}"), schema=arrow)
    crowded = statements(mt, "second")
    assert crowded == alone, f"alone {dict(alone)}, among 200 more tables {dict(crowded)}"
