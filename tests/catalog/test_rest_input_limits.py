"""Malformed input never reaches a 5xx: bounded body size and nesting, pyiceberg's own crashes on odd shapes
answered with a 400 naming the field."""

from __future__ import annotations

import json

import httpx
import pyarrow as pa
import pytest
from catalog_http import error_of

from mt_magic.catalog.server.edge import MAX_BODY_BYTES, MAX_JSON_DEPTH

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
ODD_MAP = {"type": "map", "key-id": 2, "key": {"type": "struct", "fields": []}, "value-id": 3, "value": "binary"}
ODD_FIELD = {"id": 1, "name": "m", "type": ODD_MAP, "required": False, "initial-default": "abc"}


@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_deeply_nested_body_is_400(http: httpx.Client, ns: str, opener: bytes) -> None:
    body = opener * 5000
    for path in ("/v1/namespaces", f"/v1/namespaces/{ns}/tables", f"/v1/namespaces/{ns}/tables/t"):
        message = error_of(http.post(path, content=body), 400, "BadRequestException")
        assert f"more than {MAX_JSON_DEPTH} levels" in message


def test_nesting_inside_strings_does_not_count(http: httpx.Client) -> None:
    namespace = "[" * (MAX_JSON_DEPTH + 5) + '\\"{'
    response = http.post("/v1/namespaces", content=json.dumps({"namespace": [namespace]}).encode())
    assert response.status_code == 200, response.text


def test_lone_surrogates_are_400(http: httpx.Client, ns: str) -> None:
    body = b'{"updates": {"k": "\\ud800"}}'
    assert "lone surrogate (\\ud800)" in error_of(
        http.post(f"/v1/namespaces/{ns}/properties", content=body), 400, "BadRequestException"
    )


def test_oversized_body_is_413(http: httpx.Client) -> None:
    body = b'{"namespace": ["' + b"x" * (MAX_BODY_BYTES + 1) + b'"]}'
    message = error_of(http.post("/v1/namespaces", content=body), 413, "RequestTooLargeException")
    assert str(MAX_BODY_BYTES) in message


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "tables",
            {"name": "t2", "schema": {"type": "struct", "fields": [ODD_FIELD]}},
            "schema",
        ),
        (
            "tables/t",
            {
                "updates": [
                    {"action": "set-location", "location": "x"},
                    {"action": "add-spec", "spec": {"fields": [{}]}},
                ]
            },
            "updates[1]",
        ),
        (
            "tables",
            {"name": "t2", "schema": SCHEMA, "partition-spec": {"fields": [{"transform": "identity", "name": "x"}]}},
            "partition-spec",
        ),
        ("tables", {"name": "t2", "schema": SCHEMA, "properties": []}, "properties"),
    ],
)
def test_shapes_pyiceberg_cannot_read_are_400_naming_the_field(
    http: httpx.Client, rest, ns: str, path: str, body: dict, field: str
) -> None:
    rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    response = http.post(f"/v1/namespaces/{ns}/{path}", json=body)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert message.startswith("Invalid request body") and field in message, message


def test_transaction_with_odd_update_shape_is_400(http: httpx.Client, rest, ns: str) -> None:
    rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    change = {
        "identifier": {"namespace": [ns], "name": "t"},
        "updates": [{"action": "add-sort-order", "sort-order": {"fields": [{}]}}],
    }
    response = http.post("/v1/transactions/commit", json={"table-changes": [change]})
    assert "table-changes" in error_of(response, 400, "BadRequestException")
    assert rest.load_table((ns, "t")).metadata.sort_orders[0].order_id == 0  # nothing changed


@pytest.mark.parametrize("version", ["abc", "0", "9"])
def test_unknown_format_versions_are_400(http: httpx.Client, ns: str, version: str) -> None:
    create = {"name": "t", "schema": SCHEMA, "properties": {"format-version": version}}
    assert version in error_of(http.post(f"/v1/namespaces/{ns}/tables", json=create), 400, "BadRequestException")


def test_namespace_properties_must_fit_the_database(http: httpx.Client, ns: str) -> None:
    response = http.post(f"/v1/namespaces/{ns}/properties", json={"updates": {"k": "v" * 1001}})
    assert "'k'" in error_of(response, 400, "BadRequestException")
    response = http.post("/v1/namespaces", json={"namespace": ["x" * 300]})
    assert "at most 255" in error_of(response, 400, "BadRequestException")
