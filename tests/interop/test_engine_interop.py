"""Other engines read materialized tables through the same REST catalog and see what Spark sees: pyiceberg
(its own REST client) and DuckDB (its iceberg extension, installed from PyPI, ATTACHed to the catalog).

Checked after the first refresh and after a second one, full (FULL mode) and incremental (CONTINUOUS mode, a
merge of the changed groups), so the readers also follow a table whose latest snapshot rewrote rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_catalog import CATALOG

from mt_magic.catalog.client import CatalogConfig, open_catalog
from mt_magic.sql import parse_cell

pytestmark = pytest.mark.spark

Row = tuple[Any, ...]
COLUMNS = ("customer", "orders", "total")


def _execute(mt, cell: str) -> None:  # type: ignore[no-untyped-def]
    for statement in parse_cell(cell):
        result = mt.execute(statement)
        if result.refresh is not None:
            result.refresh.result(timeout=300)


def _spark_rows(spark, table: str) -> list[Row]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in spark.sql(f"SELECT {', '.join(COLUMNS)} FROM {table}").collect())


def _pyiceberg_rows(config: CatalogConfig, identifier: str) -> list[Row]:
    table = open_catalog(config).load_table(identifier)
    data = table.scan(selected_fields=COLUMNS).to_arrow().to_pylist()
    return sorted(tuple(r[c] for c in COLUMNS) for r in data)


def _extension(package: str, name: str) -> Path:
    module = pytest.importorskip(package, reason=f"pip install {package.replace('_', '-')} (in the dev extras)")
    [path] = Path(module.__file__).parent.rglob(f"{name}.duckdb_extension")
    return path


@pytest.fixture(scope="module")
def duck(connection) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """DuckDB with the iceberg extension (and the avro and httpfs extensions it needs), all from PyPI, with the
    test catalog attached as ``lake``."""
    import duckdb

    db = duckdb.connect()
    for package, name in (
        ("duckdb_extension_avro", "avro"),
        ("duckdb_extension_httpfs", "httpfs"),
        ("duckdb_extension_iceberg", "iceberg"),
    ):
        db.execute(f"LOAD '{_extension(package, name)}'")
    props = connection.catalog_config.properties
    auth = f", TOKEN '{props['token']}'" if props.get("token") else ", AUTHORIZATION_TYPE 'none'"
    db.execute(f"ATTACH '{props.get('warehouse', '')}' AS lake (TYPE iceberg, ENDPOINT '{props['uri']}'{auth})")
    yield db
    db.close()


def _duckdb_rows(duck, namespace: str, table: str) -> list[Row]:  # type: ignore[no-untyped-def]
    return sorted(
        tuple(r) for r in duck.execute(f'SELECT {", ".join(COLUMNS)} FROM lake."{namespace}"."{table}"').fetchall()
    )


def _check_readers_follow_refreshes(mt, connection, duck, freshness: str) -> None:  # type: ignore[no-untyped-def]
    spark = connection.spark
    namespace = mt.workspace.default_namespace
    spark.sql("CREATE TABLE orders (id BIGINT, customer STRING, amount DOUBLE) USING iceberg")
    spark.sql("INSERT INTO orders VALUES (1, 'ann', 10.0), (2, 'bob', 5.5), (3, 'ann', 2.5), (4, 'cy', 1.0)")
    _execute(
        mt,
        f"""CREATE MATERIALIZED TABLE revenue FRESHNESS = {freshness}
        AS SELECT customer, count(*) AS orders, sum(amount) AS total FROM orders GROUP BY customer""",
    )
    qualified = f"{CATALOG}.{namespace}.revenue"
    first = _spark_rows(spark, qualified)
    assert first == [("ann", 2, 12.5), ("bob", 1, 5.5), ("cy", 1, 1.0)]
    assert _pyiceberg_rows(connection.catalog_config, f"{namespace}.revenue") == first
    assert _duckdb_rows(duck, namespace, "revenue") == first

    spark.sql("INSERT INTO orders VALUES (5, 'bob', 4.5), (6, 'dee', 7.0)")
    _execute(mt, "ALTER MATERIALIZED TABLE revenue REFRESH")
    second = _spark_rows(spark, qualified)
    assert second == [("ann", 2, 12.5), ("bob", 2, 10.0), ("cy", 1, 1.0), ("dee", 1, 7.0)]
    assert _pyiceberg_rows(connection.catalog_config, f"{namespace}.revenue") == second
    assert _duckdb_rows(duck, namespace, "revenue") == second


def test_readers_follow_full_refreshes(mt, connection, duck) -> None:  # type: ignore[no-untyped-def]
    _check_readers_follow_refreshes(mt, connection, duck, "INTERVAL '1' HOUR")


def test_readers_follow_incremental_refreshes(mt, connection, duck) -> None:  # type: ignore[no-untyped-def]
    _check_readers_follow_refreshes(mt, connection, duck, "INTERVAL '1' MINUTE")


def test_readers_see_the_definition_as_plain_table_properties(mt, connection) -> None:  # type: ignore[no-untyped-def]
    spark = connection.spark
    namespace = mt.workspace.default_namespace
    spark.sql("CREATE TABLE clicks (id BIGINT, page STRING) USING iceberg")
    spark.sql("INSERT INTO clicks VALUES (1, 'home'), (2, 'home'), (3, 'cart')")
    _execute(
        mt,
        """CREATE MATERIALIZED TABLE page_hits FRESHNESS = INTERVAL '1' HOUR
        AS SELECT page, count(*) AS hits FROM clicks GROUP BY page""",
    )
    table = open_catalog(connection.catalog_config).load_table(f"{namespace}.page_hits")
    assert "GROUP BY page" in table.properties["mt.query"]
    assert table.properties["mt.refresh-mode"] == "FULL"
    [refresh] = [s for s in table.snapshots() if "refresh-state" in s.summary.additional_properties]
    assert refresh.snapshot_id == table.current_snapshot().snapshot_id
    assert sorted(tuple(r.values()) for r in table.scan().to_arrow().to_pylist()) == [("cart", 1), ("home", 2)]
