"""The catalog server as an in-process ASGI app with an admin and one principal under test (imported by name).

No subprocess and no Spark: requests go through Starlette's TestClient, so a matrix of hundreds of requests takes
seconds. The app is the one ``serve`` runs (:func:`~mt_magic.catalog.server.app.create_app` over
:func:`~mt_magic.catalog.server.app.open_sql_catalog`), on SQLite or any SQLAlchemy URL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient
from test_rest_locations import SCHEMA, VIEW_VERSION

from mt_magic.catalog.server.app import create_app, open_sql_catalog

ADMIN_TOKEN = "admin-token-of-the-matrix"


def client(database: str, warehouse: Path, token: str = ADMIN_TOKEN) -> TestClient:
    """A client of a fresh app on ``database`` speaking as ``token``'s principal."""
    catalog = open_sql_catalog(database, warehouse)
    app = create_app(catalog, ADMIN_TOKEN, warehouse=str(warehouse))
    return as_principal(TestClient(app, base_url="http://127.0.0.1"), token)


def as_principal(http: TestClient, token: str) -> TestClient:
    """A client of the same app with another token."""
    other = TestClient(http.app, base_url="http://127.0.0.1")
    other.headers.update({"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    return other


def ok(response: Any) -> Any:
    assert response.status_code < 300, response.text
    return response.json() if response.status_code != 204 and response.content else None


def new_principal(admin: TestClient, name: str, role: str) -> TestClient:
    """A principal with one (empty) role of its own."""
    token = ok(admin.post("/v1/mt/principals", json={"name": name, "kind": "service"}))["token"]
    ok(admin.post("/v1/mt/roles", json={"name": role}))
    ok(admin.post(f"/v1/mt/roles/{role}/members", json={"principal": name}))
    return as_principal(admin, token)


def grant(admin: TestClient, role: str, privilege: str, on: dict[str, Any], granted: bool = True) -> None:
    ok(
        admin.post(
            "/v1/mt/grants" if granted else "/v1/mt/grants/revoke",
            json={"role": role, "privilege": privilege, "on": on},
        )
    )


def create_table(admin: TestClient, ns: str, name: str) -> dict[str, Any]:
    return ok(admin.post(f"/v1/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA}))  # type: ignore[no-any-return]


def create_view(admin: TestClient, ns: str, name: str) -> dict[str, Any]:
    body = {"name": name, "schema": {**SCHEMA, "schema-id": 0}, "view-version": VIEW_VERSION, "properties": {}}
    return ok(admin.post(f"/v1/namespaces/{ns}/views", json=body))  # type: ignore[no-any-return]
