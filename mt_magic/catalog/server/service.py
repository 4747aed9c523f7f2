"""The server's state: one SQL catalog, its stores, and the lock that serializes writes."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fastapi import Request
from pyiceberg.catalog.sql import SqlCatalog

from mt_magic.catalog.server.namespaces import NamespaceStore
from mt_magic.catalog.server.tables_store import TableStore
from mt_magic.catalog.server.views_store import ViewStore


@dataclass(frozen=True)
class CatalogService:
    """Everything a route needs; built once per app by :func:`build_service`."""

    catalog: SqlCatalog
    warehouse: str
    lock: threading.RLock
    namespaces: NamespaceStore
    tables: TableStore
    views: ViewStore


def build_service(catalog: SqlCatalog, warehouse: str) -> CatalogService:
    """Wire the stores over one catalog with one shared write lock (tables and views share names)."""
    lock = threading.RLock()
    namespaces = NamespaceStore(catalog, lock)
    holder: dict[str, ViewStore] = {}
    tables = TableStore(catalog, namespaces, lock, view_exists=lambda ident: holder["views"].exists(ident))
    views = ViewStore(catalog, namespaces, lock, table_exists=lambda ident: tables.location_of(ident) is not None)
    holder["views"] = views
    return CatalogService(catalog, warehouse, lock, namespaces, tables, views)


def service(request: Request) -> CatalogService:
    """FastAPI dependency: the app's :class:`CatalogService`."""
    return request.app.state.service  # type: ignore[no-any-return]


async def raw_body(request: Request) -> bytes:
    """FastAPI dependency: the request body, parsed later by :func:`mt_magic.catalog.server.wire.parse_body`."""
    return await request.body()
