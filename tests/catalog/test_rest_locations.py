"""Tables and views keep their files inside the warehouse (or operator-allowed roots): outside locations are
refused on create, register and commit, and a purge never deletes outside."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from catalog_http import error_of
from pyiceberg.catalog import Catalog
from serve_process import serving

from mt_magic.catalog.embedded import EmbeddedServer

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
VIEW_VERSION = {
    "version-id": 1,
    "timestamp-ms": 1,
    "schema-id": 0,
    "summary": {},
    "representations": [{"type": "sql", "sql": "SELECT 1 AS a", "dialect": "spark"}],
    "default-namespace": [],
}


def forbidden(response: httpx.Response) -> str:
    return error_of(response, 403, "ForbiddenException")


@pytest.mark.parametrize(
    "location", ["file:///etc", "/etc/x", "file:/tmp/elsewhere", "s3://bucket/t", "{wh}/../escaped", "{wh}x/sibling"]
)
def test_create_outside_the_warehouse_is_403(
    http: httpx.Client, rest: Catalog, ns: str, catalog_server: EmbeddedServer, location: str
) -> None:
    location = location.format(wh=catalog_server.warehouse)
    message = forbidden(
        http.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA, "location": location})
    )
    assert location in message and "--allow-location" in message
    staged = {"name": "t", "schema": SCHEMA, "location": location, "stage-create": True}
    forbidden(http.post(f"/v1/namespaces/{ns}/tables", json=staged))
    assert not rest.table_exists((ns, "t"))


@pytest.mark.parametrize("key", ["write.data.path", "write.metadata.path"])
def test_path_properties_outside_are_403_on_create_and_commit(
    http: httpx.Client, rest: Catalog, ns: str, key: str
) -> None:
    create = {"name": "t", "schema": SCHEMA, "properties": {key: "file:///tmp/outside"}}
    assert key in forbidden(http.post(f"/v1/namespaces/{ns}/tables", json=create))
    table = rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    commit = {"updates": [{"action": "set-properties", "updates": {key: "/var/tmp/outside"}}]}
    assert key in forbidden(http.post(f"/v1/namespaces/{ns}/tables/t", json=commit))
    commit = {"updates": [{"action": "set-location", "location": "file:///root"}]}
    forbidden(http.post(f"/v1/namespaces/{ns}/tables/t", json=commit))
    assert rest.load_table((ns, "t")).metadata == table.metadata  # nothing changed
    inside = {"updates": [{"action": "set-properties", "updates": {key: f"{table.location()}/elsewhere"}}]}
    assert http.post(f"/v1/namespaces/{ns}/tables/t", json=inside).status_code == 200


def test_register_outside_is_403(http: httpx.Client, rest: Catalog, ns: str, tmp_path: Path) -> None:
    table = rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    copied = tmp_path / "copied.metadata.json"
    shutil.copy(table.metadata_location.removeprefix("file://"), copied)
    for location in (str(copied), copied.as_uri(), "/etc/passwd"):
        message = forbidden(
            http.post(f"/v1/namespaces/{ns}/register", json={"name": "r", "metadata-location": location})
        )
        assert "root:" not in message  # the file was never read
    missing = f"{table.location()}/metadata/nope.metadata.json"
    assert "Cannot read" in error_of(
        http.post(f"/v1/namespaces/{ns}/register", json={"name": "r", "metadata-location": missing}),
        400,
        "BadRequestException",
    )


def test_namespace_and_view_locations_outside_are_403(http: httpx.Client, ns: str) -> None:
    forbidden(http.post("/v1/namespaces", json={"namespace": [f"{ns}_x"], "properties": {"location": "/etc"}}))
    forbidden(http.post(f"/v1/namespaces/{ns}/properties", json={"updates": {"location": "file:///etc"}}))
    view = {"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION, "location": "/tmp/view"}
    forbidden(http.post(f"/v1/namespaces/{ns}/views", json=view))
    view.pop("location")
    assert http.post(f"/v1/namespaces/{ns}/views", json=view).status_code == 200
    replace = {"updates": [{"action": "set-location", "location": "/tmp/view"}]}
    forbidden(http.post(f"/v1/namespaces/{ns}/views/v", json=replace))


def test_purge_never_deletes_outside(http: httpx.Client, rest: Catalog, ns: str, tmp_path: Path) -> None:
    table = rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    table.append(pa.table({"a": pa.array([1], pa.int32())}))
    outside = tmp_path / "precious.parquet"
    pq.write_table(pa.table({"a": pa.array([2], pa.int32())}), outside)
    table.add_files([str(outside)])  # a client may list any path in a manifest
    assert sorted(rest.load_table((ns, "t")).scan().to_arrow()["a"].to_pylist()) == [1, 2]
    inside = [p for p in rest.load_table((ns, "t")).inspect.files()["file_path"].to_pylist() if "precious" not in p]

    assert http.delete(f"/v1/namespaces/{ns}/tables/t", params={"purgeRequested": "true"}).status_code == 204
    assert outside.exists()
    assert not any(Path(p.removeprefix("file://").removeprefix("file:")).exists() for p in inside)


def test_operator_allowed_roots(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    with serving("--warehouse", str(tmp_path / "wh"), "--allow-location", str(extra)) as url:
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.post("/v1/namespaces", json={"namespace": ["n"]}).status_code == 200
            create = {"name": "t", "schema": SCHEMA, "location": f"{extra.as_uri()}/t"}
            assert http.post("/v1/namespaces/n/tables", json=create).status_code == 200
            assert list((extra / "t" / "metadata").glob("*.metadata.json"))
            forbidden(http.post("/v1/namespaces/n/tables", json={**create, "name": "u", "location": str(tmp_path)}))
