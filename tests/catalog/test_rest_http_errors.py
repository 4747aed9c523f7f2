"""The wire contract: every failure is the spec's ErrorModel with the right status and ``type``; bad input is
a 400, never a 500; without the token nothing is served."""

from __future__ import annotations

import httpx
import pytest
from catalog_http import error_of

from mt_magic.catalog.embedded import EmbeddedServer


def test_missing_table_is_404_no_such_table(http: httpx.Client, ns: str) -> None:
    message = error_of(http.get(f"/v1/namespaces/{ns}/tables/nope"), 404, "NoSuchTableException")
    assert f"{ns}.nope" in message
    assert http.head(f"/v1/namespaces/{ns}/tables/nope").status_code == 404
    error_of(http.delete(f"/v1/namespaces/{ns}/tables/nope"), 404, "NoSuchTableException")


def test_missing_namespace_is_404_no_such_namespace(http: httpx.Client) -> None:
    message = error_of(http.get("/v1/namespaces/no_such_ns"), 404, "NoSuchNamespaceException")
    assert "no_such_ns" in message
    error_of(http.get("/v1/namespaces/no_such_ns/tables"), 404, "NoSuchNamespaceException")
    error_of(http.get("/v1/namespaces", params={"parent": "no_such_ns"}), 404, "NoSuchNamespaceException")
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
    error_of(
        http.post("/v1/namespaces/no_such_ns/tables", json={"name": "t", "schema": schema}),
        404,
        "NoSuchNamespaceException",
    )


def test_existing_namespace_and_table_are_409_already_exists(http: httpx.Client, ns: str) -> None:
    error_of(http.post("/v1/namespaces", json={"namespace": [ns]}), 409, "AlreadyExistsException")
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}
    assert http.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": schema}).status_code == 200
    message = error_of(
        http.post(f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": schema}), 409, "AlreadyExistsException"
    )
    assert f"{ns}.t" in message


def test_dropping_a_namespace_with_tables_is_409_not_empty(http: httpx.Client, rest, ns: str) -> None:
    import pyarrow as pa

    rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    message = error_of(http.delete(f"/v1/namespaces/{ns}"), 409, "NamespaceNotEmptyException")
    assert "1 table(s)" in message
    rest.drop_table((ns, "t"))
    assert http.delete(f"/v1/namespaces/{ns}").status_code == 204
    assert http.head(f"/v1/namespaces/{ns}").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/namespaces", b"{not json"),
        ("POST", "/v1/namespaces", b""),
        ("POST", "/v1/namespaces", b"[1, 2]"),
        ("POST", "/v1/namespaces", b'{"namespace": "flat-string"}'),
        ("POST", "/v1/namespaces", b'{"namespace": []}'),
        ("POST", "/v1/namespaces", b'{"namespace": ["a\\u001fb"]}'),
        ("POST", "/v1/namespaces", b'{"namespace": [" "]}'),
        ("POST", "/v1/namespaces/{ns}/tables", b'{"name": "a\\u0000", "schema": {"type": "struct", "fields": []}}'),
        ("POST", "/v1/namespaces/{ns}/properties", b'{"updates": {"k": 1}}'),
        ("POST", "/v1/namespaces/{ns}/tables", b'{"name": "t"}'),
        ("POST", "/v1/namespaces/{ns}/tables", b'{"name": "t", "schema": {"type": "struct", "fields": [{}]}}'),
        ("POST", "/v1/namespaces/{ns}/tables/t", b'{"requirements": [], "updates": [{"action": "explode"}]}'),
        ("POST", "/v1/namespaces/{ns}/tables/t", b'{"requirements": [{"type": "assert-magic"}], "updates": []}'),
        ("POST", "/v1/transactions/commit", b'{"table-changes": [{"requirements": [], "updates": []}]}'),
        ("POST", "/v1/tables/rename", b'{"source": {"namespace": ["x"]}}'),
        ("POST", "/v1/namespaces/{ns}/register", b'{"name": "r", "metadata-location": 42}'),
        ("POST", "/v1/namespaces/{ns}/views", b'{"name": "v"}'),
        ("POST", "/v1/namespaces/{ns}/tables/t/metrics", b'"just a string"'),
        ("GET", "/v1/namespaces?pageToken=zzz", None),
        ("GET", "/v1/namespaces?pageToken=&pageSize=0", None),
        ("GET", "/v1/namespaces/{ns}/tables/t?snapshots=some", None),
    ],
)
def test_malformed_input_is_400_bad_request(
    http: httpx.Client, ns: str, method: str, path: str, body: bytes | None
) -> None:
    response = http.request(method, path.format(ns=ns), content=body, headers={"Content-Type": "application/json"})
    message = error_of(response, 400, "BadRequestException")
    assert message.startswith(("Invalid", "Cannot read")), message  # Java prefixes "Malformed request"


def test_malformed_json_message_says_where(http: httpx.Client) -> None:
    response = http.post("/v1/namespaces", content=b'{"namespace": ["a"], }')
    assert "not valid JSON" in error_of(response, 400, "BadRequestException")


def test_unknown_update_action_is_named_in_the_message(http: httpx.Client, ns: str) -> None:
    body = {"requirements": [], "updates": [{"action": "explode"}]}
    assert "explode" in error_of(http.post(f"/v1/namespaces/{ns}/tables/t", json=body), 400, "BadRequestException")


def test_overlapping_property_update_is_422(http: httpx.Client, ns: str) -> None:
    body = {"removals": ["k"], "updates": {"k": "v"}}
    message = error_of(http.post(f"/v1/namespaces/{ns}/properties", json=body), 422, "UnprocessableEntityException")
    assert "'k'" in message


def test_unknown_route_is_404_in_error_shape(http: httpx.Client) -> None:
    error_of(http.get("/v1/no/such/route"), 404, "NotFoundException")


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic dGVzdA==", "Bearer"])
def test_requests_without_the_token_are_401(catalog_server: EmbeddedServer, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    for method, path in (("GET", "/v1/config"), ("GET", "/v1/namespaces"), ("POST", "/v1/namespaces")):
        response = httpx.request(method, f"{catalog_server.uri}{path}", headers=headers, json={"namespace": ["x"]})
        message = error_of(response, 401, "NotAuthorizedException")
        assert "Bearer" in message
    assert httpx.get(f"{catalog_server.uri}/v1/namespaces/x", headers=headers).status_code == 401


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        ({"action": "set-current-schema", "schema-id": 99}, "Schema with id 99 does not exist"),
        ({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 42}, "unknown snapshot"),
        ({"action": "upgrade-format-version", "format-version": 1}, "Cannot downgrade"),
        ({"action": "remove-schemas", "schema-ids": [0]}, "Cannot remove the current schema 0"),
        ({"action": "set-current-schema", "schema-id": -1}, "no schema was added"),
        (
            {
                "action": "add-spec",
                "spec": {
                    "spec-id": 1,
                    "fields": [{"source-id": 77, "field-id": 1000, "transform": "identity", "name": "x"}],
                },
            },
            "Cannot find source column(s) [77]",
        ),
    ],
)
def test_updates_that_break_iceberg_rules_are_400(http: httpx.Client, rest, ns: str, update: dict, reason: str) -> None:
    import pyarrow as pa

    rest.create_table((ns, "t"), schema=pa.schema([("a", pa.int32())]))
    response = http.post(f"/v1/namespaces/{ns}/tables/t", json={"requirements": [], "updates": [update]})
    assert reason in error_of(response, 400, "BadRequestException")
