"""Reading a table as of a snapshot works on every Spark line (the read option ``snapshot-id`` does not on
Spark 4.1's Iceberg runtime, and ``versionAsOf`` is ignored by Spark 3.5's ``.table()``)."""

from __future__ import annotations

import pytest

from mt_magic.runtime.spark.time_travel import table_at

pytestmark = pytest.mark.spark


def test_table_at_reads_the_pinned_snapshot(spark, hadoop_catalog: str) -> None:  # type: ignore[no-untyped-def]
    table = f"{hadoop_catalog}.db.pinned"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    [first] = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect()]
    spark.sql(f"INSERT INTO {table} VALUES (2)")
    assert [r.id for r in table_at(spark, table, first).collect()] == [1]
    assert sorted(r.id for r in spark.table(table).collect()) == [1, 2]
