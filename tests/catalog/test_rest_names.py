"""Names the REST protocol allows — dots, slashes, spaces, non-ASCII, multi-level namespaces, even ``..`` —
through pyiceberg's and Spark's own clients; their files always land inside the warehouse."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog

from mt_magic.catalog.embedded import EmbeddedServer

# Not ".." or "../x": HTTP clients (pyiceberg's requests, Java's) drop dot segments from URLs. Not "+" either:
# paths are decoded as Iceberg's Java client encodes them ('+' is a space), and pyiceberg 0.10 sends '+' as is.
ODD_TABLES = ["x.y", "a/b", "my table", "名前", "...", "100%"]


def warehouse_dir(server: EmbeddedServer) -> Path:
    return Path(server.warehouse.removeprefix("file://"))


def inside(location: str, server: EmbeddedServer) -> bool:
    path = Path(location.removeprefix("file://").removeprefix("file:")).resolve()
    return path.is_relative_to(warehouse_dir(server).resolve())


def test_pyiceberg_round_trips_odd_names(rest: Catalog, catalog_server: EmbeddedServer) -> None:
    top = f"new.db{uuid.uuid4().hex[:6]}"
    for ns in [(top,), (top, "a b"), (top, "a b", "数据"), (top, "a/b")]:
        rest.create_namespace(ns)
    assert sorted(rest.list_namespaces((top,))) == [(top, "a b"), (top, "a/b")]
    assert rest.list_namespaces((top, "a b")) == [(top, "a b", "数据")]
    assert (top,) in rest.list_namespaces()
    assert (top.split(".")[0],) not in rest.list_namespaces()  # the dot is inside one level

    ns = (top, "a b", "数据")
    for i, name in enumerate(ODD_TABLES):
        table = rest.create_table((*ns, name), schema=pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
        assert inside(table.location(), catalog_server), table.location()
    assert sorted(t[-1] for t in rest.list_tables(ns)) == sorted(ODD_TABLES)
    for i, name in enumerate(ODD_TABLES):
        assert rest.load_table((*ns, name)).scan().to_arrow()["id"].to_pylist() == [i]
    rest.rename_table((*ns, "a/b"), (top, "a/b", "c d"))
    assert rest.load_table((top, "a/b", "c d")).scan().to_arrow()["id"].to_pylist() == [1]
    for name in ODD_TABLES[2:]:
        rest.drop_table((*ns, name))
    assert sorted(t[-1] for t in rest.list_tables(ns)) == ["x.y"]


def test_dotted_namespace_is_one_level_on_the_wire(http: httpx.Client) -> None:
    name = f"new.db{uuid.uuid4().hex[:6]}"
    assert http.post("/v1/namespaces", json={"namespace": [name]}).status_code == 200
    assert http.get(f"/v1/namespaces/{name}").json()["namespace"] == [name]
    assert http.head(f"/v1/namespaces/{name.replace('.', '%1F')}").status_code == 404
    # Java's client form-encodes names: '+' is a space, %2F a slash inside one name
    assert http.post("/v1/namespaces", json={"namespace": [name, "a b/c"]}).status_code == 200
    assert http.get(f"/v1/namespaces/{name}%1Fa+b%2Fc").json()["namespace"] == [name, "a b/c"]


def test_a_parent_is_read_with_its_levels_as_sent_or_percent_encoded(http: httpx.Client) -> None:
    """``?parent=``: Java's client and pyiceberg 0.10 send the levels as they are, pyiceberg 0.12 percent-encodes
    each level before the query is encoded; both list the same children. When both readings exist, the levels
    as sent win (the spec's and Java's reading)."""
    top = f"p{uuid.uuid4().hex[:6]}"
    wide = "[" * 100  # 300 characters once percent-encoded: longer than a level may be
    for ns in [
        [top],
        [top, "a/b"],
        [top, "a/b", "c"],
        [top, "100%"],
        [top, "100%", "d"],
        [top, wide],
        [top, wide, "e"],
    ]:
        assert http.post("/v1/namespaces", json={"namespace": ns}).status_code == 200
    for level, child in [("a/b", "c"), ("100%", "d"), (wide, "e")]:
        for sent in (level, quote(level, safe="")):
            listed = http.get("/v1/namespaces", params={"parent": f"{top}\x1f{sent}"})
            assert listed.status_code == 200, (sent, listed.text)
            assert listed.json()["namespaces"] == [[top, level, child]], sent
    assert http.post("/v1/namespaces", json={"namespace": [top, "100%25"]}).status_code == 200
    as_sent = http.get("/v1/namespaces", params={"parent": f"{top}\x1f100%25"})
    assert as_sent.status_code == 200 and as_sent.json()["namespaces"] == []  # "100%25" itself, not "100%"
    missing = http.get("/v1/namespaces", params={"parent": f"{top}\x1fnone%2Fhere"})
    assert missing.status_code == 404 and "none%2Fhere" in missing.text


def test_names_cannot_steer_files_out_of_the_warehouse(http: httpx.Client, catalog_server: EmbeddedServer) -> None:
    levels = ["..", "..", f"etc{uuid.uuid4().hex[:6]}"]
    for depth in range(1, 4):
        assert http.post("/v1/namespaces", json={"namespace": levels[:depth]}).status_code == 200
    path_ns = "%1F".join(lv.replace(".", "%2E") for lv in levels)
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    created = http.post(f"/v1/namespaces/{path_ns}/tables", json={"name": "../../../tmp", "schema": schema})
    assert created.status_code == 200, created.text
    assert inside(created.json()["metadata"]["location"], catalog_server)
    assert inside(created.json()["metadata-location"], catalog_server)
    loaded = http.get(f"/v1/namespaces/{path_ns}/tables/%2E%2E%2F%2E%2E%2F%2E%2E%2Ftmp")
    assert loaded.status_code == 200 and loaded.json()["metadata"]["location"] == created.json()["metadata"]["location"]


@pytest.mark.spark
def test_spark_uses_odd_names(spark, spark_cat: str, rest: Catalog, catalog_server: EmbeddedServer) -> None:  # type: ignore[no-untyped-def]
    top = f"sp.db{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE NAMESPACE {spark_cat}.`{top}`")
    spark.sql(f"CREATE NAMESPACE {spark_cat}.`{top}`.`a b`")
    spark.sql(f"CREATE NAMESPACE {spark_cat}.`{top}`.`a b`.`数据`")
    ns = f"{spark_cat}.`{top}`.`a b`.`数据`"
    for i, name in enumerate(["x.y", "a/b", "my table", "名前", "plus+sign"]):
        spark.sql(f"CREATE TABLE {ns}.`{name}` (id BIGINT) USING iceberg")
        spark.sql(f"INSERT INTO {ns}.`{name}` VALUES ({i})")
        assert [r.id for r in spark.sql(f"SELECT id FROM {ns}.`{name}`").collect()] == [i]
        if "+" not in name:  # pyiceberg 0.10 sends '+' unencoded (see ODD_TABLES)
            table = rest.load_table((top, "a b", "数据", name))
            assert table.scan().to_arrow()["id"].to_pylist() == [i]
            assert inside(table.location(), catalog_server)
    shown = {r.tableName for r in spark.sql(f"SHOW TABLES IN {ns}").collect()}
    assert shown == {"x.y", "a/b", "my table", "名前", "plus+sign"}
    children = [tuple(r) for r in spark.sql(f"SHOW NAMESPACES IN {spark_cat}.`{top}`").collect()]
    assert children == [(f"`{top}`.`a b`",)]
    spark.sql(f"DROP TABLE {ns}.`a/b` PURGE")
    assert not rest.table_exists((top, "a b", "数据", "a/b"))
