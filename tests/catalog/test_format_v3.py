"""Format version 3 tables: created, upgraded, committed with row lineage, loaded by pyiceberg and by Spark.

pyiceberg 0.10 cannot write v3 metadata; the server writes it itself (``catalog/server/format_v3.py``): a new
or upgraded table starts at ``next-row-id`` 0, each added snapshot keeps its ``first-row-id`` and
``added-rows``, and the table's ``next-row-id`` grows by the rows each snapshot adds.
"""

from __future__ import annotations

import httpx
import pyarrow as pa
import pytest
from catalog_http import error_of

SCHEMA = {
    "type": "struct",
    "fields": [
        {"id": 1, "name": "a", "type": "int", "required": True, "initial-default": 12, "write-default": 10},
        {"id": 2, "name": "b", "type": "string", "required": False},
    ],
}


def _snapshot(snapshot_id: int, first_row_id: int, added_rows: int, parent: int | None = None) -> dict:
    return {
        "snapshot-id": snapshot_id,
        **({"parent-snapshot-id": parent} if parent else {}),
        "sequence-number": 1 if parent is None else 2,
        "timestamp-ms": 1_700_000_000_000 + snapshot_id,
        "manifest-list": f"file:///nowhere/snap-{snapshot_id}.avro",
        "summary": {"operation": "append"},
        "schema-id": 0,
        "first-row-id": first_row_id,
        "added-rows": added_rows,
    }


def _append(snapshot: dict) -> dict:
    return {
        "updates": [
            {"action": "add-snapshot", "snapshot": snapshot},
            {
                "action": "set-snapshot-ref",
                "ref-name": "main",
                "type": "branch",
                "snapshot-id": snapshot["snapshot-id"],
            },
        ]
    }


def test_a_v3_table_keeps_row_lineage_and_column_defaults(http: httpx.Client, rest, ns: str) -> None:
    create = {"name": "t", "schema": SCHEMA, "properties": {"format-version": "3"}}
    created = http.post(f"/v1/namespaces/{ns}/tables", json=create)
    assert created.status_code == 200, created.text
    metadata = created.json()["metadata"]
    assert metadata["format-version"] == 3 and metadata["next-row-id"] == 0
    assert metadata["schemas"][0]["fields"][0]["initial-default"] == 12
    assert metadata["schemas"][0]["fields"][0]["write-default"] == 10

    first = http.post(f"/v1/namespaces/{ns}/tables/t", json=_append(_snapshot(1, 0, 5)))
    assert first.status_code == 200, first.text
    assert first.json()["metadata"]["next-row-id"] == 5
    second = http.post(f"/v1/namespaces/{ns}/tables/t", json=_append(_snapshot(2, 5, 3, parent=1)))
    assert second.status_code == 200, second.text

    loaded = http.get(f"/v1/namespaces/{ns}/tables/t").json()["metadata"]  # read back from the file
    assert loaded["next-row-id"] == 8
    assert [(s["first-row-id"], s["added-rows"]) for s in loaded["snapshots"]] == [(0, 5), (5, 3)]
    table = rest.load_table((ns, "t"))
    assert table.metadata.format_version == 3 and table.metadata.next_row_id == 8


def test_a_snapshot_behind_the_next_row_id_is_refused(http: httpx.Client, ns: str) -> None:
    http.post(
        f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA, "properties": {"format-version": "3"}}
    )
    assert http.post(f"/v1/namespaces/{ns}/tables/t", json=_append(_snapshot(1, 0, 5))).status_code == 200
    behind = http.post(f"/v1/namespaces/{ns}/tables/t", json=_append(_snapshot(2, 4, 1, parent=1)))
    assert "first-row-id is behind table next-row-id: 4 < 5" in error_of(behind, 400, "BadRequestException")


def test_a_v2_table_upgrades_to_v3_and_never_back(http: httpx.Client, rest, ns: str) -> None:
    rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    upgrade = {"updates": [{"action": "upgrade-format-version", "format-version": 3}]}
    response = http.post(f"/v1/namespaces/{ns}/tables/t", json=upgrade)
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["format-version"] == 3 and response.json()["metadata"]["next-row-id"] == 0
    down = {"updates": [{"action": "upgrade-format-version", "format-version": 2}]}
    assert "downgrade" in error_of(http.post(f"/v1/namespaces/{ns}/tables/t", json=down), 400, "BadRequestException")


@pytest.mark.spark
def test_spark_creates_writes_and_reads_v3_tables(spark, spark_cat: str, rest) -> None:  # type: ignore[no-untyped-def]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {spark_cat}.sp_v3")
    spark.sql(f"CREATE TABLE {spark_cat}.sp_v3.t (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"INSERT INTO {spark_cat}.sp_v3.t VALUES (1), (2), (3)")
    spark.sql(f"INSERT INTO {spark_cat}.sp_v3.t VALUES (4)")
    spark.sql(
        f"CREATE TABLE {spark_cat}.sp_v3.c USING iceberg TBLPROPERTIES ('format-version'='3') "
        f"AS SELECT id * 10 AS id FROM {spark_cat}.sp_v3.t"
    )
    assert sorted(r.id for r in spark.table(f"{spark_cat}.sp_v3.c").collect()) == [10, 20, 30, 40]
    table = rest.load_table(("sp_v3", "t"))
    assert table.metadata.format_version == 3 and table.metadata.next_row_id == 4
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
