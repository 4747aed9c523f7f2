"""Spark's own Iceberg REST client (Iceberg 1.10) against the server, and Spark <-> pyiceberg interplay."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException

pytestmark = pytest.mark.spark


def local_files(location: str) -> list[Path]:
    root = Path(location.removeprefix("file://"))
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def collect(spark, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [tuple(r) for r in spark.sql(sql).collect()]


def test_namespaces_tables_merge_alter_rename(spark, spark_cat: str, rest: Catalog) -> None:
    spark.sql(f"CREATE NAMESPACE {spark_cat}.sp_db WITH DBPROPERTIES ('team' = 'data')")
    assert ("sp_db",) in collect(spark, f"SHOW NAMESPACES IN {spark_cat}")
    assert rest.load_namespace_properties("sp_db")["team"] == "data"
    t = f"{spark_cat}.sp_db.orders"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, amount INT) USING iceberg PARTITIONED BY (bucket(4, id))")
    spark.sql(f"INSERT INTO {t} VALUES (1, 10), (2, 20)")
    spark.sql(f"""MERGE INTO {t} AS t USING (SELECT 2 AS id, 25 AS amount UNION ALL SELECT 3, 30) AS s
                  ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN note STRING")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('mt.freshness' = 'INTERVAL 1 HOUR')")
    spark.sql(f"ALTER TABLE {t} RENAME TO sp_db.orders_v2")  # Spark's target is relative to the catalog

    assert collect(spark, f"SELECT id, amount, note FROM {spark_cat}.sp_db.orders_v2 ORDER BY id") == [
        (1, 10, None),
        (2, 25, None),
        (3, 30, None),
    ]
    table = rest.load_table(("sp_db", "orders_v2"))
    assert [f.name for f in table.schema().fields] == ["id", "amount", "note"]
    assert table.properties["mt.freshness"] == "INTERVAL 1 HOUR"
    assert [s.summary.operation.value for s in table.snapshots()] == ["append", "overwrite"]
    assert not rest.table_exists(("sp_db", "orders"))


def test_ctas_and_create_or_replace_on_existing_table(spark, spark_cat: str, rest: Catalog) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_rtas")
    t = f"{spark_cat}.sp_rtas.agg"
    spark.sql(f"CREATE TABLE {t} USING iceberg PARTITIONED BY (k) AS SELECT 1 AS k, 'a' AS v")
    for _ in range(2):  # same schema and spec again: must be reused, not duplicated
        spark.sql(f"CREATE OR REPLACE TABLE {t} USING iceberg PARTITIONED BY (k) AS SELECT 2 AS k, 'b' AS v")
    spark.sql(f"CREATE OR REPLACE TABLE {t} USING iceberg AS SELECT 3 AS k, 'c' AS v, 1.5 AS extra")
    spark.sql(f"CREATE OR REPLACE TABLE {t} USING iceberg PARTITIONED BY (k) AS SELECT 4 AS k, 'd' AS v")

    assert collect(spark, f"SELECT * FROM {t}") == [(4, "d")]
    meta = rest.load_table(("sp_rtas", "agg")).metadata
    schema_ids = [s.schema_id for s in meta.schemas]
    spec_ids = [s.spec_id for s in meta.partition_specs]
    assert len(schema_ids) == len(set(schema_ids)) == 2
    assert len(spec_ids) == len(set(spec_ids)) == 2
    assert meta.current_schema_id == 0 and meta.default_spec_id == 0  # the original ones, reused
    assert len(meta.snapshots) == 5


def test_drop_with_purge_removes_files(spark, spark_cat: str, rest: Catalog) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_purge")
    t = f"{spark_cat}.sp_purge.gone"
    spark.sql(f"CREATE TABLE {t} USING iceberg AS SELECT id FROM range(10)")
    spark.sql(f"INSERT INTO {t} SELECT id FROM range(5)")
    location = rest.load_table(("sp_purge", "gone")).location()
    assert any(p.suffix == ".parquet" for p in local_files(location))
    spark.sql(f"DROP TABLE {t} PURGE")
    assert local_files(location) == []
    assert not rest.table_exists(("sp_purge", "gone"))


def test_spark_writes_pyiceberg_reads_and_back(spark, spark_cat: str, rest: Catalog) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_x")
    spark.sql(
        f"CREATE TABLE {spark_cat}.sp_x.from_spark USING iceberg AS SELECT id, CAST(id AS STRING) AS s FROM range(3)"
    )
    assert sorted(rest.load_table(("sp_x", "from_spark")).scan().to_arrow()["id"].to_pylist()) == [0, 1, 2]

    table = rest.create_table(("sp_x", "from_py"), schema=pa.schema([("id", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"id": pa.array([7, 8], pa.int64()), "s": ["seven", "eight"]}))
    assert collect(spark, f"SELECT id, s FROM {spark_cat}.sp_x.from_py ORDER BY id") == [(7, "seven"), (8, "eight")]
    spark.sql(f"INSERT INTO {spark_cat}.sp_x.from_py VALUES (9, 'nine')")
    assert sorted(rest.load_table(("sp_x", "from_py")).scan().to_arrow()["id"].to_pylist()) == [7, 8, 9]


def test_snapshot_property_write_option_lands_in_the_summary(spark, spark_cat: str, rest: Catalog) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_props")
    t = f"{spark_cat}.sp_props.t"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING iceberg")
    spark.range(3).writeTo(t).option("snapshot-property.mt.x", "1").append()
    summary = rest.load_table(("sp_props", "t")).current_snapshot().summary
    assert summary["mt.x"] == "1" and summary["added-records"] == "3"


def test_pyiceberg_gets_409_after_a_spark_commit_then_retries(spark, spark_cat: str, rest: Catalog) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_race")
    t = f"{spark_cat}.sp_race.t"
    # pyiceberg 0.12 would retry the 409 itself (0.10 never does)
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('commit.retry.num-retries' = '0')")
    spark.sql(f"INSERT INTO {t} VALUES (1)")
    stale = rest.load_table(("sp_race", "t"))
    spark.sql(f"INSERT INTO {t} VALUES (2)")
    with pytest.raises(CommitFailedException):
        stale.append(pa.table({"id": pa.array([3], pa.int64())}))
    rest.load_table(("sp_race", "t")).append(pa.table({"id": pa.array([3], pa.int64())}))
    assert collect(spark, f"SELECT id FROM {t} ORDER BY id") == [(1,), (2,), (3,)]


def test_views_create_replace_rename_drop(spark, spark_cat: str, http) -> None:  # type: ignore[no-untyped-def]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_views")
    spark.sql(f"CREATE TABLE {spark_cat}.sp_views.base USING iceberg AS SELECT id FROM range(4)")
    v = f"{spark_cat}.sp_views.evens"
    spark.sql(f"CREATE VIEW {v} AS SELECT id FROM {spark_cat}.sp_views.base WHERE id % 2 = 0")
    assert collect(spark, f"SELECT * FROM {v} ORDER BY id") == [(0,), (2,)]
    spark.sql(
        f"CREATE OR REPLACE VIEW {v} AS SELECT id, id * 10 AS big FROM {spark_cat}.sp_views.base WHERE id % 2 = 0"
    )
    assert collect(spark, f"SELECT * FROM {v} ORDER BY id") == [(0, 0), (2, 20)]
    spark.sql(f"ALTER VIEW {v} RENAME TO {spark_cat}.sp_views.evens2")  # views: full name
    shown = collect(spark, f"SHOW VIEWS IN {spark_cat}.sp_views")  # with the session's temporary views (isTemporary)
    assert [r[1] for r in shown if not r[2]] == ["evens2"]

    loaded = http.get("/v1/namespaces/sp_views/views/evens2").json()
    meta = loaded["metadata"]
    assert meta["current-version-id"] == 2 and len(meta["versions"]) == 2 and len(meta["schemas"]) == 2
    assert "id * 10" in meta["versions"][-1]["representations"][0]["sql"]
    assert (
        http.post("/v1/namespaces/sp_views/tables", json={"name": "evens2", "schema": meta["schemas"][0]}).json()[
            "error"
        ]["type"]
        == "AlreadyExistsException"
    )
    assert http.delete("/v1/namespaces/sp_views").json()["error"]["type"] == "NamespaceNotEmptyException"
    spark.sql(f"DROP VIEW {spark_cat}.sp_views.evens2")
    assert http.get("/v1/namespaces/sp_views/views/evens2").json()["error"]["type"] == "NoSuchViewException"


def test_expire_snapshots_cleaning_expired_schemas_and_specs(spark, spark_cat: str, rest: Catalog) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_expire")
    t = f"{spark_cat}.sp_expire.t"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING iceberg PARTITIONED BY (id)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    spark.sql(f"ALTER TABLE {t} DROP PARTITION FIELD id")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN v")
    spark.sql(f"INSERT OVERWRITE {t} SELECT 2")
    before = rest.load_table(("sp_expire", "t")).metadata
    assert len(before.schemas) == 2 and len(before.partition_specs) == 2

    spark.sql(
        f"CALL {spark_cat}.system.expire_snapshots(table => 'sp_expire.t', retain_last => 1, "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', clean_expired_metadata => true)"
    )
    after = rest.load_table(("sp_expire", "t")).metadata  # Java sent remove-schemas (spec 0 is still in use)
    assert [s.schema_id for s in after.schemas] == [after.current_schema_id]
    assert len(after.snapshots) == 1 and collect(spark, f"SELECT id FROM {t}") == [(2,)]
