"""Protocol details over raw HTTP: config endpoints, namespaces (multi-level, parent, paging), staged creates,
commits with requirements, transactions, ETags, snapshots=refs, register and metrics."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pyarrow as pa

from mt_magic.catalog.server.app import ENDPOINTS

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False},
        {"id": 2, "name": "name", "type": "string", "required": False},
    ],
}


def test_config_lists_every_endpoint_it_serves(http: httpx.Client) -> None:
    body = http.get("/v1/config", params={"warehouse": "anything"}).json()
    assert body["defaults"] == {} and body["overrides"] == {}
    assert set(body["endpoints"]) == set(ENDPOINTS)
    for endpoint in (
        "POST /v1/{prefix}/transactions/commit",
        "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
        "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    ):
        assert endpoint in body["endpoints"]


def test_multilevel_namespaces_use_the_unit_separator(http: httpx.Client) -> None:
    top = f"top_{uuid.uuid4().hex[:6]}"
    for parts in ([top], [top, "b"], [top, "c"], [top, "b", "x"]):
        assert http.post("/v1/namespaces", json={"namespace": parts, "properties": {"p": "1"}}).status_code == 200
    assert http.get(f"/v1/namespaces/{top}%1Fb").json() == {"namespace": [top, "b"], "properties": {"p": "1"}}
    assert http.head(f"/v1/namespaces/{top}%1Fb%1Fx").status_code == 204
    children = http.get("/v1/namespaces", params={"parent": top}).json()
    assert children == {"namespaces": [[top, "b"], [top, "c"]], "next-page-token": None}
    assert http.get("/v1/namespaces", params={"parent": f"{top}\x1fb"}).json()["namespaces"] == [[top, "b", "x"]]
    assert [top] in http.get("/v1/namespaces").json()["namespaces"]
    assert http.delete(f"/v1/namespaces/{top}%1Fb").status_code == 409  # it has a child namespace


def test_namespace_and_table_lists_page_with_tokens(http: httpx.Client, rest, ns: str) -> None:
    for i in range(5):
        rest.create_table((ns, f"t{i}"), schema=pa.schema([("a", pa.int32())]))
    seen, token, pages = [], "", 0
    while token is not None:
        body = http.get(f"/v1/namespaces/{ns}/tables", params={"pageToken": token, "pageSize": 2}).json()
        seen += [i["name"] for i in body["identifiers"]]
        token, pages = body["next-page-token"], pages + 1
    assert seen == ["t0", "t1", "t2", "t3", "t4"] and pages == 3
    everything = http.get(f"/v1/namespaces/{ns}/tables").json()
    assert len(everything["identifiers"]) == 5 and everything["next-page-token"] is None


def test_namespace_properties_update_reports_changes(http: httpx.Client, ns: str) -> None:
    body = http.post(f"/v1/namespaces/{ns}/properties", json={"updates": {"a": "1", "b": "2"}}).json()
    assert body == {"updated": ["a", "b"], "removed": [], "missing": []}
    body = http.post(f"/v1/namespaces/{ns}/properties", json={"removals": ["a", "zz"], "updates": {"b": "3"}}).json()
    assert body == {"updated": ["b"], "removed": ["a"], "missing": ["zz"]}
    assert http.get(f"/v1/namespaces/{ns}").json()["properties"]["b"] == "3"


def _stage_then_commit(http: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    staged = http.post(f"/v1/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA, "stage-create": True})
    assert staged.status_code == 200 and "metadata-location" not in staged.json()
    assert http.head(f"/v1/namespaces/{ns}/tables/{name}").status_code == 404  # staged is not created
    meta = staged.json()["metadata"]
    updates = [
        {"action": "assign-uuid", "uuid": meta["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": meta["schemas"][0]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": meta["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": meta["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": meta["location"]},
        {"action": "set-properties", "updates": {"created-by": "test"}},
    ]
    return {"requirements": [{"type": "assert-create"}], "updates": updates}


def test_stage_create_then_assert_create_commit(http: httpx.Client, ns: str) -> None:
    commit = _stage_then_commit(http, ns, "staged")
    response = http.post(f"/v1/namespaces/{ns}/tables/staged", json=commit)  # no identifier, like Java
    assert response.status_code == 200, response.text
    assert response.json()["metadata-location"].endswith(".metadata.json")
    loaded = http.get(f"/v1/namespaces/{ns}/tables/staged").json()["metadata"]
    assert loaded["properties"]["created-by"] == "test" and len(loaded["schemas"]) == 1
    again = http.post(f"/v1/namespaces/{ns}/tables/staged", json=commit)
    assert again.status_code == 409 and again.json()["error"]["type"] == "CommitFailedException"


def test_stale_requirement_is_409_commit_failed(http: httpx.Client, rest, ns: str) -> None:
    table = rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    table.append(pa.table({"a": pa.array([1], pa.int32())}))
    stale = {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 12345}],
        "updates": [{"action": "set-properties", "updates": {"x": "1"}}],
    }
    response = http.post(f"/v1/namespaces/{ns}/tables/t", json=stale)
    assert response.status_code == 409 and response.json()["error"]["type"] == "CommitFailedException"
    assert "12345" in response.json()["error"]["message"]
    current = table.refresh().metadata.current_snapshot_id
    fresh = {**stale, "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": current}]}
    assert http.post(f"/v1/namespaces/{ns}/tables/t", json=fresh).status_code == 200
    assert rest.load_table((ns, "t")).properties["x"] == "1"


def test_transaction_is_all_or_nothing(http: httpx.Client, rest, ns: str) -> None:
    for name in ("a", "b"):
        rest.create_table((ns, name), schema=pa.schema([("x", pa.int32())]))
    uuid_a = str(rest.load_table((ns, "a")).metadata.table_uuid)

    def change(name: str, table_uuid: str, value: str) -> dict[str, Any]:
        return {
            "identifier": {"namespace": [ns], "name": name},
            "requirements": [{"type": "assert-table-uuid", "uuid": table_uuid}],
            "updates": [{"action": "set-properties", "updates": {"v": value}}],
        }

    uuid_b = str(rest.load_table((ns, "b")).metadata.table_uuid)
    failed = http.post(
        "/v1/transactions/commit",
        json={"table-changes": [change("a", uuid_a, "1"), change("b", str(uuid.uuid4()), "1")]},
    )
    assert failed.status_code == 409
    assert "v" not in rest.load_table((ns, "a")).properties  # a's change was not applied either
    both = [change("a", uuid_a, "2"), change("b", uuid_b, "2")]
    ok = http.post("/v1/transactions/commit", json={"table-changes": both})
    assert ok.status_code == 204, ok.text
    assert [rest.load_table((ns, n)).properties["v"] for n in ("a", "b")] == ["2", "2"]


def test_load_with_refs_only_and_etag(http: httpx.Client, rest, ns: str) -> None:
    table = rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    for i in range(2):
        table.append(pa.table({"a": pa.array([i], pa.int32())}))
    table.manage_snapshots().create_tag(table.metadata.snapshots[0].snapshot_id, "first").commit()
    everything = http.get(f"/v1/namespaces/{ns}/tables/t")
    assert len(everything.json()["metadata"]["snapshots"]) == 2
    table.append(pa.table({"a": pa.array([9], pa.int32())}))
    refs = http.get(f"/v1/namespaces/{ns}/tables/t", params={"snapshots": "refs"}).json()["metadata"]
    assert {s["snapshot-id"] for s in refs["snapshots"]} == {r["snapshot-id"] for r in refs["refs"].values()}
    assert len(refs["snapshots"]) == 2  # main and the tag, not the middle snapshot
    current = http.get(f"/v1/namespaces/{ns}/tables/t")
    etag = current.headers["ETag"]
    assert etag != everything.headers["ETag"]
    assert http.get(f"/v1/namespaces/{ns}/tables/t", headers={"If-None-Match": etag}).status_code == 304


def test_register_existing_metadata_and_report_metrics(http: httpx.Client, rest, ns: str) -> None:
    table = rest.create_table((ns, "orig"), schema=pa.schema([("a", pa.int32())]))
    table.append(pa.table({"a": pa.array([7], pa.int32())}))
    location = rest.load_table((ns, "orig")).metadata_location
    alias = http.post(f"/v1/namespaces/{ns}/register", json={"name": "copy", "metadata-location": location})
    assert alias.status_code == 403  # a second name for a live table's files (tests/security/test_own_table_only.py)
    report = {"report-type": "commit-report", "table-name": f"{ns}.orig", "snapshot-id": 1, "metrics": {}}
    assert http.post(f"/v1/namespaces/{ns}/tables/orig/metrics", json=report).status_code == 204
    rest.drop_table((ns, "orig"))  # without purge: its files stay, owned by no table
    registered = http.post(f"/v1/namespaces/{ns}/register", json={"name": "copy", "metadata-location": location})
    assert registered.status_code == 200 and registered.json()["metadata-location"] == location
    assert rest.load_table((ns, "copy")).scan().to_arrow()["a"].to_pylist() == [7]
    again = http.post(f"/v1/namespaces/{ns}/register", json={"name": "copy", "metadata-location": location})
    assert again.status_code == 409


def test_set_statistics_from_json_is_applied(http: httpx.Client, rest, ns: str) -> None:
    table = rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    table.append(pa.table({"a": pa.array([1], pa.int32())}))
    snapshot_id = table.metadata.current_snapshot_id
    stats = {
        "snapshot-id": snapshot_id,
        "statistics-path": f"{table.location()}/metadata/stats.puffin",
        "file-size-in-bytes": 10,
        "file-footer-size-in-bytes": 4,
        "blob-metadata": [
            {"type": "apache-datasketches-theta-v1", "snapshot-id": snapshot_id, "sequence-number": 1, "fields": [1]}
        ],
    }
    body = {
        "requirements": [],
        "updates": [{"action": "set-statistics", "snapshot-id": snapshot_id, "statistics": stats}],
    }
    assert http.post(f"/v1/namespaces/{ns}/tables/t", json=body).status_code == 200
    [loaded] = rest.load_table((ns, "t")).metadata.statistics
    assert loaded.snapshot_id == snapshot_id and loaded.blob_metadata[0].fields == [1]
