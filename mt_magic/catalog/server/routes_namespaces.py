"""``/v1/namespaces`` routes: list (with ``parent`` and paging), create, load, exists, drop, properties."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import APIRouter, Depends, Query, Response
from pyiceberg.exceptions import NamespaceNotEmptyError
from pyiceberg.typedef import Identifier

from mt_magic.catalog.privileges import namespace as namespace_object
from mt_magic.catalog.server.authz import Authorized, authorize
from mt_magic.catalog.server.errors_http import BadRequest
from mt_magic.catalog.server.names import NAMESPACE_SEPARATOR
from mt_magic.catalog.server.service import CatalogService, raw_body, service
from mt_magic.catalog.server.wire import (
    CreateNamespaceBody,
    UpdateNamespacePropertiesBody,
    check_namespace,
    display,
    namespace_from_path,
    page,
    parse_body,
)

router = APIRouter(prefix="/v1/namespaces", dependencies=[Depends(authorize)])
Svc = Annotated[CatalogService, Depends(service)]
Body = Annotated[bytes, Depends(raw_body)]


@router.get("")
def list_namespaces(
    svc: Svc,
    caller: Authorized,
    parent: str | None = None,
    page_token: Annotated[str | None, Query(alias="pageToken")] = None,
    page_size: Annotated[int | None, Query(alias="pageSize")] = None,
) -> dict[str, Any]:
    parent_ns = parent_namespace(svc, parent) if parent else ()
    visible = [ns for ns in svc.namespaces.children(parent_ns) if caller.sees(namespace_object(*ns))]
    items, token = page(visible, page_token, page_size)
    return {"namespaces": [list(ns) for ns in items], "next-page-token": token}


def parent_namespace(svc: CatalogService, parent: str) -> Identifier:
    """The ``parent`` query parameter as clients send it: each level as it is (Java's client, pyiceberg before
    0.12), or each level percent-encoded once more (pyiceberg 0.12 quotes the levels before the HTTP client encodes
    the query). The levels as sent are the namespace unless they are not a valid one (an encoded level can be too
    long) or only their decoded form exists; a parent valid in neither form is refused as sent."""
    levels = parent.split(NAMESPACE_SEPARATOR)
    readings = [ns for ns in (_valid(levels), _valid([unquote(level) for level in levels])) if ns is not None]
    if not readings:
        return check_namespace(levels)  # raises, naming the levels as sent
    as_sent, decoded = readings[0], readings[-1]
    if decoded != as_sent and not svc.namespaces.exists(as_sent) and svc.namespaces.exists(decoded):
        return decoded
    return as_sent


def _valid(levels: list[str]) -> Identifier | None:
    try:
        return check_namespace(levels)
    except BadRequest:
        return None


@router.post("")
def create_namespace(svc: Svc, raw: Body) -> dict[str, Any]:
    body = parse_body(raw, CreateNamespaceBody)
    namespace = check_namespace(body.namespace)
    properties = svc.namespaces.create(namespace, body.properties)
    return {"namespace": list(namespace), "properties": properties}


@router.post("/{namespace:path}/properties")
def update_properties(svc: Svc, namespace: str, raw: Body) -> dict[str, list[str]]:
    body = parse_body(raw, UpdateNamespacePropertiesBody)
    return svc.namespaces.update(namespace_from_path(namespace), body.removals, body.updates)


@router.get("/{namespace:path}")
def load_namespace(svc: Svc, namespace: str) -> dict[str, Any]:
    ns = namespace_from_path(namespace)
    return {"namespace": list(ns), "properties": svc.namespaces.properties(ns)}


@router.head("/{namespace:path}", status_code=204)
def namespace_exists(svc: Svc, namespace: str) -> Response:
    svc.namespaces.require(namespace_from_path(namespace))
    return Response(status_code=204)


@router.delete("/{namespace:path}", status_code=204)
def drop_namespace(svc: Svc, namespace: str) -> Response:
    ns = namespace_from_path(namespace)
    with svc.lock:
        contents = [
            f"{len(items)} {kind}"
            for kind, items in (
                ("table(s)", svc.tables.list_tables(ns)),
                ("view(s)", svc.views.list_views(ns)),
                ("namespace(s)", svc.namespaces.children(ns)),
            )
            if items
        ]
        if contents:
            raise NamespaceNotEmptyError(f"Namespace {display(ns)} is not empty: it contains {', '.join(contents)}")
        svc.namespaces.drop(ns)
    return Response(status_code=204)
