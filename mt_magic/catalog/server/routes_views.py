"""View routes: list, create, load, exists, replace (commit), drop, rename, register."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from mt_magic.catalog.server.authz import Authorized, authorize
from mt_magic.catalog.server.errors_http import BadRequest
from mt_magic.catalog.server.service import CatalogService, raw_body, service
from mt_magic.catalog.server.views import CommitViewBody, CreateViewBody, LoadViewResult, ViewMetadata
from mt_magic.catalog.server.wire import (
    RegisterBody,
    RenameBody,
    identifier,
    identifier_from_wire,
    identifier_to_wire,
    namespace_from_path,
    page,
    parse_body,
)

router = APIRouter(prefix="/v1", dependencies=[Depends(authorize)])
Svc = Annotated[CatalogService, Depends(service)]
Body = Annotated[bytes, Depends(raw_body)]
VIEW = "/namespaces/{namespace:path}/views/{view:path}"


def _view_result(location: str, metadata: ViewMetadata) -> Response:
    result = LoadViewResult.model_validate({"metadata_location": location, "metadata": metadata})
    return Response(content=result.model_dump_json(), media_type="application/json")


@router.get("/namespaces/{namespace:path}/views")
def list_views(
    svc: Svc,
    caller: Authorized,
    namespace: str,
    page_token: Annotated[str | None, Query(alias="pageToken")] = None,
    page_size: Annotated[int | None, Query(alias="pageSize")] = None,
) -> dict[str, Any]:
    readable = [i for i in svc.views.list_views(namespace_from_path(namespace)) if caller.reads(i)]
    items, token = page(readable, page_token, page_size)
    return {"identifiers": [identifier_to_wire(i) for i in items], "next-page-token": token}


@router.post("/namespaces/{namespace:path}/views")
def create_view(svc: Svc, namespace: str, raw: Body) -> Response:
    body = parse_body(raw, CreateViewBody)
    ident = identifier(namespace_from_path(namespace), body.name, "view")
    return _view_result(*svc.views.create(ident, body))


@router.get(VIEW)
def load_view(svc: Svc, namespace: str, view: str) -> Response:
    return _view_result(*svc.views.load(identifier(namespace_from_path(namespace), view, "view")))


@router.head(VIEW, status_code=204)
def view_exists(svc: Svc, namespace: str, view: str) -> Response:
    svc.views.load(identifier(namespace_from_path(namespace), view, "view"))
    return Response(status_code=204)


@router.post(VIEW)
def replace_view(svc: Svc, namespace: str, view: str, raw: Body) -> Response:
    body = parse_body(raw, CommitViewBody)
    ident = identifier(namespace_from_path(namespace), view, "view")
    if body.identifier is not None and identifier_from_wire(body.identifier, "view") != ident:
        raise BadRequest(f"The body names view {identifier_from_wire(body.identifier)} but the path names {ident}")
    return _view_result(*svc.views.commit(ident, body.requirements, body.updates))


@router.delete(VIEW, status_code=204)
def drop_view(svc: Svc, namespace: str, view: str) -> Response:
    svc.views.drop(identifier(namespace_from_path(namespace), view, "view"))
    return Response(status_code=204)


@router.post("/views/rename", status_code=204)
def rename_view(svc: Svc, raw: Body) -> Response:
    body = parse_body(raw, RenameBody)
    svc.views.rename(identifier_from_wire(body.source, "view"), identifier_from_wire(body.destination, "view"))
    return Response(status_code=204)


@router.post("/namespaces/{namespace:path}/register-view")
def register_view(svc: Svc, namespace: str, raw: Body) -> Response:
    body = parse_body(raw, RegisterBody)
    ident = identifier(namespace_from_path(namespace), body.name, "view")
    return _view_result(body.metadata_location, svc.views.register(ident, body.metadata_location))
