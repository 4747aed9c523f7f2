"""Snapshot retention on real tables: refreshes expire old snapshots (and the files only they referenced)
under the table's own Iceberg policy, which CREATE sets from the freshness or WITH."""

from __future__ import annotations

from pathlib import Path

import pytest
from mt_testing import run
from shared_catalog import CATALOG

from mt_magic.runtime.refresh import retention

pytestmark = pytest.mark.spark


def data_files_on_disk(spark, table: str) -> int:
    location = spark.sql(f"SELECT file_path FROM {table}.all_data_files LIMIT 1").first()
    root = Path(location[0].removeprefix("file:")).parent if location else None
    while root is not None and root.name != "data":
        root = root.parent
    return sum(1 for _ in root.rglob("*.parquet")) if root else 0


def test_create_sets_the_iceberg_retention_policy_from_freshness_or_with(mt, spark) -> None:
    spark.sql("CREATE TABLE src (v INT) USING iceberg")
    run(
        mt,
        "CREATE MATERIALIZED TABLE fast FRESHNESS = INTERVAL '10' SECOND AS SELECT v FROM src;"
        "CREATE MATERIALIZED TABLE daily FRESHNESS = INTERVAL '1' DAY AS SELECT v FROM src;"
        "CREATE MATERIALIZED TABLE mine WITH ('history.expire.min-snapshots-to-keep' = '7') "
        "FRESHNESS = INTERVAL '10' SECOND AS SELECT v FROM src",
    )
    ns = mt.workspace.default_namespace

    def policy(table: str) -> tuple[str, str]:
        props = mt.workspace.catalog.load(f"{CATALOG}.{ns}.{table}").properties
        return props[retention.MAX_AGE_MS], props[retention.MIN_TO_KEEP]

    assert policy("fast") == (str(3600 * 1000), "100")  # 100 × 10 s is less than the one-hour floor
    assert policy("daily") == (str(100 * 86400 * 1000), "100")
    assert policy("mine") == (str(3600 * 1000), "7")


def test_refreshes_expire_old_snapshots_and_their_files(mt, spark, monkeypatch) -> None:
    monkeypatch.setattr(retention, "EXPIRE_BATCH", 3)
    spark.sql("CREATE TABLE src (v INT) USING iceberg")
    spark.sql("INSERT INTO src VALUES (0)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE totals WITH ('history.expire.max-snapshot-age-ms' = '1', "
        "'history.expire.min-snapshots-to-keep' = '2') FRESHNESS = INTERVAL '1' HOUR "
        "AS SELECT count(*) AS n, sum(v) AS s FROM src",
    )
    name = f"{CATALOG}.{mt.workspace.default_namespace}.totals"
    counts = []
    for i in range(1, 7):
        spark.sql(f"INSERT INTO src VALUES ({i})")
        run(mt, "ALTER MATERIALIZED TABLE totals REFRESH")
        counts.append(len(mt.workspace.catalog.load(name).snapshots))

    # 7 refreshes (FULL mode: each replaces the one data file); expiry ran whenever 3 had become expirable
    assert max(counts) <= 2 + retention.EXPIRE_BATCH
    assert counts[-1] < 7
    assert spark.sql(f"SELECT * FROM {name}").collect()[0].asDict() == {"n": 7, "s": 21}
    assert data_files_on_disk(spark, name) == counts[-1]  # one file per kept snapshot; the rest deleted
    info = mt.workspace.catalog.load(name)
    assert info.last_refresh() is not None  # the refresh state survives in the kept snapshots
