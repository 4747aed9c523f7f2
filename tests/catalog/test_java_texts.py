"""What Java clients show users comes from the server's messages: those the REST Compatibility Kit checks are
Java's own (``UpdateRequirement``, ``InMemoryCatalog``, ``ViewMetadata``), and views follow Java's rules for
dialects and ``write.metadata.path``. The kit itself runs in ``test_rest_compatibility_kit.py``."""

from __future__ import annotations

from pathlib import Path

import httpx
from catalog_http import error_of

from mt_magic.catalog.embedded import EmbeddedServer

SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}


def _view(name: str, *representations: tuple[str, str], properties: dict[str, str] | None = None) -> dict:
    return {
        "name": name,
        "schema": SCHEMA,
        "properties": properties or {},
        "view-version": {
            "version-id": 1,
            "timestamp-ms": 1,
            "schema-id": 0,
            "summary": {},
            "representations": [{"type": "sql", "sql": sql, "dialect": dialect} for sql, dialect in representations],
            "default-namespace": [],
        },
    }


def test_names_taken_by_the_other_kind(http: httpx.Client, ns: str) -> None:
    assert http.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    assert http.post(f"/v1/namespaces/{ns}/views", json=_view("v", ("SELECT 1 AS a", "spark"))).status_code == 200
    taken = {
        "table over a view": (f"/v1/namespaces/{ns}/tables", {"name": "v", "schema": SCHEMA}),
        "view over a table": (f"/v1/namespaces/{ns}/views", _view("t", ("SELECT 1 AS a", "spark"))),
    }
    messages = {
        what: error_of(http.post(path, json=body), 409, "AlreadyExistsException")
        for what, (path, body) in taken.items()
    }
    assert messages == {
        "table over a view": f"View with same name already exists: {ns}.v",
        "view over a table": f"Table with same name already exists: {ns}.t",
    }
    renames = {
        "/v1/tables/rename": ({"namespace": [ns], "name": "t"}, {"namespace": [ns], "name": "v"}),
        "/v1/views/rename": ({"namespace": [ns], "name": "v"}, {"namespace": [ns], "name": "t"}),
    }
    texts = [
        error_of(http.post(path, json={"source": src, "destination": dst}), 409, "AlreadyExistsException")
        for path, (src, dst) in renames.items()
    ]
    assert texts == [
        f"Cannot rename {ns}.t to {ns}.v. View already exists",
        f"Cannot rename {ns}.v to {ns}.t. Table already exists",
    ]


def test_a_commit_conflict_says_what_changed_as_java_does(http: httpx.Client, ns: str) -> None:
    http.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA})
    stale = {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}], "updates": []}
    message = error_of(http.post(f"/v1/namespaces/{ns}/tables/t", json=stale), 409, "CommitFailedException")
    assert message == "Requirement failed: current schema changed: expected id 7 != 0"
    again = {"requirements": [{"type": "assert-create"}], "updates": []}
    assert error_of(http.post(f"/v1/namespaces/{ns}/tables/t", json=again), 409, "CommitFailedException") == (
        "Requirement failed: table already exists"
    )


def test_a_view_version_has_one_query_per_dialect(http: httpx.Client, ns: str) -> None:
    twice = _view("v", ("SELECT 1 AS a", "trino"), ("SELECT 2 AS a", "Trino"))
    message = error_of(http.post(f"/v1/namespaces/{ns}/views", json=twice), 400, "IllegalArgumentException")
    assert message == "Invalid view version: Cannot add multiple queries for dialect trino"
    assert http.post(f"/v1/namespaces/{ns}/views", json=_view("v", ("SELECT 1 AS a", "trino"))).status_code == 200


def test_a_views_metadata_goes_where_write_metadata_path_says(
    http: httpx.Client, ns: str, catalog_server: EmbeddedServer
) -> None:
    inside = f"{catalog_server.warehouse}/custom/{ns}"
    created = http.post(
        f"/v1/namespaces/{ns}/views",
        json=_view("v", ("SELECT 1 AS a", "spark"), properties={"write.metadata.path": inside}),
    )
    assert created.status_code == 200, created.text
    assert created.json()["metadata-location"].startswith(f"{inside}/00000-")
    assert any(Path(inside.removeprefix("file://")).glob("*.metadata.json"))
    outside = _view("w", ("SELECT 1 AS a", "spark"), properties={"write.metadata.path": "file:///tmp/elsewhere"})
    error_of(http.post(f"/v1/namespaces/{ns}/views", json=outside), 403, "ForbiddenException")
