"""Namespaces in the SQL catalog database (pyiceberg ``SqlCatalog``'s own rows), plus default locations.

Levels are stored encoded (:func:`mt_magic.catalog.server.names.storage_namespace`), so a level may contain dots.
"""

from __future__ import annotations

import threading

from pyiceberg.catalog import LOCATION, WAREHOUSE_LOCATION, Catalog
from pyiceberg.catalog.sql import IcebergNamespaceProperties, IcebergTables, SqlCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchNamespaceError
from pyiceberg.typedef import Identifier, Properties
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from mt_magic.catalog.privileges import namespace as namespace_object
from mt_magic.catalog.server import audit
from mt_magic.catalog.server.access_store import AccessStore
from mt_magic.catalog.server.errors_http import BadRequest, RestError
from mt_magic.catalog.server.locations import StorageRoots
from mt_magic.catalog.server.names import directory_name, namespace_from_storage, storage_namespace
from mt_magic.catalog.server.wire import display

MAX_KEY_CHARS, MAX_VALUE_CHARS = 255, 1000  # SqlCatalog's column widths


def check_properties(properties: Properties) -> None:
    """Namespace properties must fit the catalog database: bounded lengths, no NUL characters.

    Raises:
        BadRequest: naming the property and the limit.
    """
    for key, value in properties.items():
        if not key or len(key) > MAX_KEY_CHARS or "\x00" in key:
            raise BadRequest(f"Invalid namespace property name {key[:40]!r}: 1 to {MAX_KEY_CHARS} characters, no NUL")
        if len(value) > MAX_VALUE_CHARS or "\x00" in value:
            raise BadRequest(
                f"Invalid value of namespace property {key!r}: at most {MAX_VALUE_CHARS} characters, no NUL"
            )


class NamespaceStore:
    """Namespace operations over one ``SqlCatalog``; writes hold ``lock``."""

    def __init__(self, catalog: SqlCatalog, lock: threading.RLock, roots: StorageRoots, access: AccessStore) -> None:
        self.catalog = catalog
        self.access = access
        self.lock = lock
        self.roots = roots

    def _check(self, namespace: Identifier, properties: Properties) -> None:
        check_properties(properties)
        if LOCATION in properties:
            self.roots.check(properties[LOCATION], f"namespace {display(namespace)} (property {LOCATION})")

    def properties(self, namespace: Identifier) -> Properties:
        """A namespace's properties. Raises NoSuchNamespaceError."""
        try:
            return dict(self.catalog.load_namespace_properties(storage_namespace(namespace)))
        except NoSuchNamespaceError:
            raise NoSuchNamespaceError(f"Namespace does not exist: {display(namespace)}") from None

    def exists(self, namespace: Identifier) -> bool:
        try:
            self.catalog.load_namespace_properties(storage_namespace(namespace))
        except NoSuchNamespaceError:
            return False
        return True

    def require(self, namespace: Identifier) -> None:
        """Raise NoSuchNamespaceError unless the namespace exists."""
        if not self.exists(namespace):
            raise NoSuchNamespaceError(f"Namespace does not exist: {display(namespace)}")

    def children(self, parent: Identifier) -> list[Identifier]:
        """Namespaces one level below ``parent`` (top level for ``()``), sorted."""
        if parent:
            self.require(parent)
        stored = self.catalog.list_namespaces(storage_namespace(parent))
        return sorted(namespace_from_storage(tuple(ns)) for ns in stored)

    def create(self, namespace: Identifier, properties: Properties) -> Properties:
        """Create a namespace and return its stored properties."""
        self._check(namespace, properties)
        with self.lock:
            if self.exists(namespace):
                raise NamespaceAlreadyExistsError(f"Namespace already exists: {display(namespace)}")
            try:
                self.catalog.create_namespace(storage_namespace(namespace), dict(properties))
            except (IntegrityError, NamespaceAlreadyExistsError):
                raise NamespaceAlreadyExistsError(f"Namespace already exists: {display(namespace)}") from None
            on = namespace_object(*namespace)
            audit.record_now(self.catalog.engine, "create-namespace", on, properties=properties)
            return self.properties(namespace)

    def drop(self, namespace: Identifier) -> None:
        """Drop an (already checked empty) namespace."""
        with self.lock:
            self.require(namespace)
            self.catalog.drop_namespace(storage_namespace(namespace))
            with self.catalog.engine.begin() as conn:  # a namespace made again later starts without its grants
                self.access.forget_object(conn, namespace_object(*namespace))
                audit.record(conn, "drop-namespace", namespace_object(*namespace))

    def update(self, namespace: Identifier, removals: list[str], updates: Properties) -> dict[str, list[str]]:
        """Set and remove properties; the spec's ``updated`` / ``removed`` / ``missing`` lists."""
        overlap = sorted(set(removals) & set(updates))
        if overlap:
            raise RestError(
                422, "UnprocessableEntityException", f"Properties cannot be both updated and removed: {overlap}"
            )
        self._check(namespace, updates)
        with self.lock:
            before = self.properties(namespace)
            self.catalog.update_namespace_properties(storage_namespace(namespace), set(removals), dict(updates))
            audit.record_now(
                self.catalog.engine, "alter-namespace", namespace_object(*namespace), set=updates, removed=removals
            )
        missing = sorted(k for k in set(removals) if k not in before)
        removed = sorted(k for k in set(removals) if k in before)
        return {"updated": sorted(updates), "removed": removed, "missing": missing}

    def folders(self) -> list[tuple[Identifier, str]]:
        """(namespace, folder) of every namespace, those its tables and deeper namespaces imply included: its
        ``location``, else ``<warehouse>/<ns>/…``; no table may keep its files over one
        (:mod:`~mt_magic.catalog.server.own_places`). Two queries, whatever the number of namespaces (a walk loaded
        each namespace's properties on every create)."""
        name = self.catalog.name
        stored_properties = select(
            IcebergNamespaceProperties.namespace,
            IcebergNamespaceProperties.property_key,
            IcebergNamespaceProperties.property_value,
        ).where(IcebergNamespaceProperties.catalog_name == name)
        of_tables = select(IcebergTables.table_namespace).where(IcebergTables.catalog_name == name).distinct()
        with self.catalog.engine.connect() as conn:
            rows = conn.execute(stored_properties).all()
            table_namespaces = conn.execute(of_tables).scalars().all()
        located: dict[tuple[str, ...], str | None] = {}
        for stored in [*(row[0] for row in rows), *table_namespaces]:
            levels = Catalog.identifier_to_tuple(stored)
            for depth in range(1, len(levels) + 1):
                located.setdefault(levels[:depth], None)
        for stored, key, value in rows:
            if key == LOCATION and value:
                located[Catalog.identifier_to_tuple(stored)] = value
        warehouse = self.catalog.properties.get(WAREHOUSE_LOCATION)
        found = []
        for levels, base in sorted(located.items()):
            namespace = namespace_from_storage(levels)
            if base:
                found.append((namespace, str(base).rstrip("/")))
            elif warehouse:
                found.append((namespace, "/".join([warehouse.rstrip("/"), *map(directory_name, namespace)])))
        return found

    def default_location(self, ident: Identifier) -> str:
        """Where a new table or view lives: the namespace's ``location``, else ``<warehouse>/<ns>/…/<name>``."""
        props = self.properties(ident[:-1])
        if base := props.get(LOCATION):
            return f"{base.rstrip('/')}/{directory_name(ident[-1])}"
        warehouse = self.catalog.properties.get(WAREHOUSE_LOCATION)
        if not warehouse:
            raise RestError(400, "BadRequestException", "The catalog has no warehouse; give the table a location")
        return "/".join([warehouse.rstrip("/"), *(directory_name(level) for level in ident)])
