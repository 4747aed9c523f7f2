"""The server's state: one SQL catalog, its stores, and the lock that serializes writes."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from fastapi import Request
from pyiceberg.catalog.sql import SqlCatalog

from mt_magic.catalog.server.access_store import AccessStore
from mt_magic.catalog.server.edge import read_body
from mt_magic.catalog.server.locations import StorageRoots
from mt_magic.catalog.server.namespaces import NamespaceStore
from mt_magic.catalog.server.storage_credentials import CredentialVendor
from mt_magic.catalog.server.tables_store import TableStore
from mt_magic.catalog.server.views_store import ViewStore


@dataclass(frozen=True)
class CatalogService:
    """Everything a route needs; built once per app by :func:`build_service`."""

    catalog: SqlCatalog
    warehouse: str
    roots: StorageRoots
    lock: threading.RLock
    namespaces: NamespaceStore
    tables: TableStore
    views: ViewStore
    access: AccessStore
    vendor: CredentialVendor | None = None
    """Hands out scoped storage credentials (an S3 warehouse with ``serve --s3-endpoint``); ``None``: none."""


def build_service(
    catalog: SqlCatalog,
    warehouse: str,
    allowed_locations: Sequence[str] = (),
    vendor: CredentialVendor | None = None,
) -> CatalogService:
    """Wire the stores over one catalog with one shared write lock (tables and views share names).

    Args:
        catalog: the SQL catalog holding the rows.
        warehouse: the warehouse URI; tables and views may keep files only inside it
        allowed_locations: ... or inside one of these (operator-allowed storage roots).
        vendor: hands out scoped storage credentials to loads and creates that ask for them (``None``: no one).
    """
    lock = threading.RLock()
    roots = StorageRoots.of(warehouse, allowed_locations)
    access = AccessStore(catalog.engine)
    access.create_tables()
    namespaces = NamespaceStore(catalog, lock, roots, access)
    holder: dict[str, ViewStore] = {}
    tables = TableStore(catalog, namespaces, lock, lambda ident: holder["views"].exists(ident), roots, access)
    views = ViewStore(catalog, namespaces, lock, lambda ident: tables.location_of(ident) is not None, roots, access)
    holder["views"] = views
    return CatalogService(catalog, warehouse, roots, lock, namespaces, tables, views, access, vendor)


def service(request: Request) -> CatalogService:
    """FastAPI dependency: the app's :class:`CatalogService`."""
    svc: CatalogService = request.app.state.service
    return svc


async def raw_body(request: Request) -> bytes:
    """FastAPI dependency: the (size-bounded) request body, parsed later by
    :func:`mt_magic.catalog.server.wire.parse_body`."""
    return await read_body(request)
