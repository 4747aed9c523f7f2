"""Every route of the catalog server goes through the one authorizer and has a rule (issue 48): a route added
without either fails here, and a request reaching a route without a rule is refused (closed by default)."""

from __future__ import annotations

from pathlib import Path

from access_app import client
from fastapi import APIRouter, Depends, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from mt_magic.catalog.server.authz import RULES, authorize


def api_routes(app: FastAPI) -> list[APIRoute]:
    """The app's routes as requests reach them (FastAPI keeps included routers as they were declared)."""
    found = []
    for context in iter_route_contexts(app.router.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            assert context.path == route.path, "the authorizer reads the declared path: no include prefixes"
            found.append(route)
    return found


def unguarded(app: FastAPI) -> list[str]:
    """Routes (method and path) without a rule in RULES or without the authorize dependency."""
    found = []
    for route in api_routes(app):
        guarded = any(dep.call is authorize for dep in route.dependant.dependencies)
        for method in sorted(route.methods):
            if (method, route.path) not in RULES or not guarded:
                found.append(f"{method} {route.path}")
    return found


def test_every_route_has_a_rule_and_goes_through_the_authorizer(tmp_path: Path) -> None:
    app = client(f"sqlite:///{tmp_path}/c.db", tmp_path / "wh").app
    assert isinstance(app, FastAPI)
    routes = api_routes(app)
    assert len(routes) >= 40  # the spec's routes and mt_magic's own
    assert unguarded(app) == []
    assert {(m, r.path) for r in routes for m in r.methods} == set(RULES)  # and no rule for a route that is gone


def test_a_route_added_without_a_rule_is_found_and_refused(tmp_path: Path) -> None:
    http = client(f"sqlite:///{tmp_path}/c.db", tmp_path / "wh")
    app = http.app
    assert isinstance(app, FastAPI)
    extra = APIRouter()

    @extra.get("/v1/mt/unruled")
    def unruled() -> dict[str, str]:
        return {"reached": "yes"}

    guarded = APIRouter(dependencies=[Depends(authorize)])
    guarded.add_api_route("/v1/mt/guarded-but-unruled", unruled, methods=["GET"])
    app.include_router(extra)
    app.include_router(guarded)
    assert unguarded(app) == ["GET /v1/mt/unruled", "GET /v1/mt/guarded-but-unruled"]
    refused = http.get("/v1/mt/guarded-but-unruled")
    assert refused.status_code == 403 and "No authorization rule" in refused.json()["error"]["message"]


def test_a_server_without_a_token_authenticates_nobody_whatever_token_a_client_sends(tmp_path: Path) -> None:
    """``--insecure-no-auth``: a client configured with some token (a shared environment's) is served as before
    principals existed, not refused with 401; a server with a token still refuses an unknown one."""
    from starlette.testclient import TestClient

    from mt_magic.catalog.server.app import create_app, open_sql_catalog

    catalog = open_sql_catalog(f"sqlite:///{tmp_path}/c.db", tmp_path / "wh")
    tokenless = TestClient(create_app(catalog, None, warehouse=str(tmp_path / "wh")), base_url="http://127.0.0.1")
    for headers in ({}, {"Authorization": "Bearer some-other-servers-token"}):
        assert tokenless.get("/v1/config", headers=headers).status_code == 200, headers
        assert tokenless.get("/v1/namespaces", headers=headers).status_code == 200, headers
    guarded = client(f"sqlite:///{tmp_path}/d.db", tmp_path / "wh2", token="some-other-servers-token")
    assert guarded.get("/v1/namespaces").status_code == 401
