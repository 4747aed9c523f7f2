"""Namespaces in the SQL catalog database (pyiceberg ``SqlCatalog``'s own rows), plus default locations."""

from __future__ import annotations

import threading

from pyiceberg.catalog import LOCATION, WAREHOUSE_LOCATION
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchNamespaceError
from pyiceberg.typedef import Identifier, Properties
from sqlalchemy.exc import IntegrityError

from mt_magic.catalog.server.errors_http import RestError
from mt_magic.catalog.server.wire import display


class NamespaceStore:
    """Namespace operations over one ``SqlCatalog``; writes hold ``lock``."""

    def __init__(self, catalog: SqlCatalog, lock: threading.RLock) -> None:
        self.catalog = catalog
        self.lock = lock

    def properties(self, namespace: Identifier) -> Properties:
        """A namespace's properties. Raises NoSuchNamespaceError."""
        try:
            return dict(self.catalog.load_namespace_properties(namespace))
        except NoSuchNamespaceError:
            raise NoSuchNamespaceError(f"Namespace does not exist: {display(namespace)}") from None

    def exists(self, namespace: Identifier) -> bool:
        try:
            self.catalog.load_namespace_properties(namespace)
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
        return sorted(tuple(ns) for ns in self.catalog.list_namespaces(parent))

    def create(self, namespace: Identifier, properties: Properties) -> Properties:
        """Create a namespace and return its stored properties."""
        with self.lock:
            if self.exists(namespace):
                raise NamespaceAlreadyExistsError(f"Namespace already exists: {display(namespace)}")
            try:
                self.catalog.create_namespace(namespace, dict(properties))
            except (IntegrityError, NamespaceAlreadyExistsError):
                raise NamespaceAlreadyExistsError(f"Namespace already exists: {display(namespace)}") from None
            return self.properties(namespace)

    def drop(self, namespace: Identifier) -> None:
        """Drop an (already checked empty) namespace."""
        with self.lock:
            self.require(namespace)
            self.catalog.drop_namespace(namespace)

    def update(self, namespace: Identifier, removals: list[str], updates: Properties) -> dict[str, list[str]]:
        """Set and remove properties; the spec's ``updated`` / ``removed`` / ``missing`` lists."""
        overlap = sorted(set(removals) & set(updates))
        if overlap:
            raise RestError(
                422, "UnprocessableEntityException", f"Properties cannot be both updated and removed: {overlap}"
            )
        with self.lock:
            before = self.properties(namespace)
            self.catalog.update_namespace_properties(namespace, set(removals), dict(updates))
        missing = sorted(k for k in set(removals) if k not in before)
        removed = sorted(k for k in set(removals) if k in before)
        return {"updated": sorted(updates), "removed": removed, "missing": missing}

    def default_location(self, ident: Identifier) -> str:
        """Where a new table or view lives: the namespace's ``location``, else ``<warehouse>/<ns>/…/<name>``."""
        props = self.properties(ident[:-1])
        if base := props.get(LOCATION):
            return f"{base.rstrip('/')}/{ident[-1]}"
        warehouse = self.catalog.properties.get(WAREHOUSE_LOCATION)
        if not warehouse:
            raise RestError(400, "BadRequestException", "The catalog has no warehouse; give the table a location")
        return "/".join([warehouse.rstrip("/"), *ident])
