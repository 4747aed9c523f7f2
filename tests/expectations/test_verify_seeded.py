"""``verify`` finds each of 10 seeded corruptions (issue 49): a row changed in each column type, deleted, duplicated
or added by a write that bypassed the refresh, two rows' values swapped. One table with a PRIMARY KEY, built once;
each case writes its corruption, verifies, and rolls back to the refresh's snapshot.
The differences come from the hashed per-bucket comparison (only differing buckets compared row by row), with the
keys they fall in and the commit that wrote them."""

from __future__ import annotations

import itertools

import pytest
from mt_testing import run
from shared_catalog import CATALOG

pytestmark = pytest.mark.spark

ROWS = (
    "(1, 10.50, 'ann', TIMESTAMP '2026-01-01 10:00:00', true, 0.5, DATE '2026-01-01'), "
    "(2, 20.00, 'bob', TIMESTAMP '2026-01-02 11:00:00', false, 1.5, DATE '2026-01-02'), "
    "(3, 30.25, NULL, TIMESTAMP '2026-01-03 12:00:00', true, NULL, DATE '2026-01-03')"
)
_count = itertools.count()

CORRUPTIONS = {  # the write on table t → (rows missing, rows extra, differing keys)
    "decimal changed": ("UPDATE t SET amount = 10.51 WHERE id = 1", (1, 1, 1)),
    "string changed": ("UPDATE t SET name = 'bOb' WHERE id = 2", (1, 1, 1)),
    "timestamp changed": ("UPDATE t SET ts = ts + INTERVAL 1 SECOND WHERE id = 3", (1, 1, 1)),
    "boolean flipped": ("UPDATE t SET flag = NOT flag WHERE id = 2", (1, 1, 1)),
    "value nulled": ("UPDATE t SET score = NULL WHERE id = 1", (1, 1, 1)),
    "null filled": ("UPDATE t SET name = '' WHERE id = 3", (1, 1, 1)),
    "row deleted": ("DELETE FROM t WHERE id = 2", (1, 0, 1)),
    "row duplicated": ("INSERT INTO t SELECT * FROM t WHERE id = 1", (0, 1, 1)),
    "row added": ("INSERT INTO t VALUES (4, 1.00, 'eve', TIMESTAMP '2026-01-04 00:00:00', true, 2.0, NULL)", (0, 1, 1)),
    "values swapped": (
        "UPDATE t SET day = CASE id WHEN 1 THEN DATE '2026-01-02' ELSE DATE '2026-01-01' END WHERE id IN (1, 2)",
        (2, 2, 2),
    ),
}


@pytest.fixture(scope="module")
def seeded(connection):  # type: ignore[no-untyped-def]
    """(service, table name, the refresh's snapshot): built once for every case."""
    from dataclasses import replace

    from mt_magic.api.handle import MaterializedTable
    from mt_magic.runtime.refresh.engine import Engine
    from mt_magic.runtime.service import MaterializedTables

    base = connection.service.workspace
    namespace = f"verify_seeded_{next(_count)}"
    base.catalog.catalog.create_namespace(namespace)
    mt = MaterializedTables.inline(Engine(replace(base, default_namespace=namespace), connection.service.engine.jobs))
    spark = connection.spark
    source = f"{CATALOG}.{namespace}.vs_src"
    spark.sql(
        f"CREATE TABLE {source} (id INT, amount DECIMAL(10,2), name STRING, ts TIMESTAMP, flag BOOLEAN, score DOUBLE, "
        "day DATE) USING iceberg"
    )
    spark.sql(f"INSERT INTO {source} VALUES {ROWS}")
    run(
        mt,
        f"CREATE MATERIALIZED TABLE {CATALOG}.{namespace}.vs (PRIMARY KEY (id) NOT ENFORCED) "
        f"FRESHNESS = INTERVAL '1' HOUR AS SELECT * FROM {source}",
    )
    name = f"{CATALOG}.{namespace}.vs"
    handle = MaterializedTable(name, mt)
    fresh = handle.verify()
    assert (fresh.equal, fresh.rows, fresh.key) == (True, 3, ("id",))
    return handle, name, fresh.snapshot_id


@pytest.mark.parametrize("case", CORRUPTIONS, ids=list(CORRUPTIONS))
def test_verify_finds_a_seeded_corruption(seeded, spark, case: str) -> None:  # type: ignore[no-untyped-def]
    handle, name, refreshed = seeded
    write, (missing, extra, keys) = CORRUPTIONS[case]
    spark.sql(write.replace(" t ", f" {name} ", 1).replace("FROM t ", f"FROM {name} "))
    try:
        found = handle.verify()
        assert (found.missing, found.extra, found.keys) == (missing, extra, keys), str(found)
        assert found.key == ("id",) and found.key_sample and all(k.startswith("id=") for k in found.key_sample)
        assert "not a refresh" in found.suspect, found.suspect
        if extra:
            assert "which wrote the extra rows' file" in found.suspect
        assert "rollback_to_snapshot" in str(found)
    finally:
        catalog, inside = name.split(".", 1)
        spark.sql(f"CALL {catalog}.system.rollback_to_snapshot('{inside}', {refreshed})")
