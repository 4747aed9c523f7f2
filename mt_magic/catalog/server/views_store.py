"""Views: metadata JSON files in the warehouse, one row per view in the catalog's SQL database.

pyiceberg's ``SqlCatalog`` stores no views, so they get a table of their own, ``mt_iceberg_views``, shaped
like ``iceberg_tables`` (catalog, namespace, name, metadata location) and written with the same
compare-and-swap, in the same database, under the same lock as tables.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchViewError
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.typedef import Identifier
from sqlalchemy import Column, MetaData, String, Table, delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from mt_magic.catalog.privileges import table
from mt_magic.catalog.server import audit
from mt_magic.catalog.server.access_store import AccessStore
from mt_magic.catalog.server.commits import new_metadata_file_name
from mt_magic.catalog.server.errors_http import INPUT_FAULTS, BadRequest, ViewAlreadyExistsError
from mt_magic.catalog.server.locations import StorageRoots
from mt_magic.catalog.server.names import namespace_key
from mt_magic.catalog.server.namespaces import NamespaceStore
from mt_magic.catalog.server.views import (
    AssertViewUUID,
    CreateViewBody,
    ViewMetadata,
    apply_view_commit,
    new_view_metadata,
)
from mt_magic.catalog.server.wire import display

_META = MetaData()
VIEWS = Table(
    "mt_iceberg_views",
    _META,
    Column("catalog_name", String(255), primary_key=True),
    Column("view_namespace", String(255), primary_key=True),
    Column("view_name", String(255), primary_key=True),
    Column("metadata_location", String(1000), nullable=False),
    Column("previous_metadata_location", String(1000), nullable=True),
)


def create_view_table(engine: Engine) -> None:
    """Create ``mt_iceberg_views`` unless it exists."""
    _META.create_all(engine)


class ViewStore:
    """View operations over the catalog's database; writes hold ``lock``."""

    def __init__(
        self,
        catalog: SqlCatalog,
        namespaces: NamespaceStore,
        lock: threading.RLock,
        table_exists: Callable[[Identifier], bool],
        roots: StorageRoots,
        access: AccessStore,
    ) -> None:
        self.catalog = catalog
        self.access = access
        self.namespaces = namespaces
        self.lock = lock
        self.table_exists = table_exists
        self.roots = roots
        create_view_table(catalog.engine)

    def _where(self, ident: Identifier) -> tuple[Any, ...]:
        return (
            VIEWS.c.catalog_name == self.catalog.name,
            VIEWS.c.view_namespace == namespace_key(ident[:-1]),
            VIEWS.c.view_name == ident[-1],
        )

    def _io(self, location: str) -> FileIO:
        return load_file_io(self.catalog.properties, location)

    def location_of(self, ident: Identifier) -> str | None:
        with self.catalog.engine.connect() as conn:
            return conn.execute(select(VIEWS.c.metadata_location).where(*self._where(ident))).scalar_one_or_none()

    def exists(self, ident: Identifier) -> bool:
        return self.location_of(ident) is not None

    def read(self, location: str) -> ViewMetadata:
        with self._io(location).new_input(location).open() as stream:
            return ViewMetadata.model_validate_json(stream.read())

    def load(self, ident: Identifier) -> tuple[str, ViewMetadata]:
        """(metadata location, metadata) of a view. Raises NoSuchViewError."""
        location = self.location_of(ident)
        if location is None:
            raise NoSuchViewError(f"View does not exist: {display(ident)}")
        return location, self.read(location)

    def list_views(self, namespace: Identifier) -> list[Identifier]:
        self.namespaces.require(namespace)
        stmt = select(VIEWS.c.view_name).where(
            VIEWS.c.catalog_name == self.catalog.name, VIEWS.c.view_namespace == namespace_key(namespace)
        )
        with self.catalog.engine.connect() as conn:
            return [(*namespace, name) for name in sorted(conn.execute(stmt).scalars())]

    def _check_free(self, ident: Identifier, renaming: Identifier | None = None) -> None:
        """The name is free for a new view (``renaming``: for that view's new name); Java's texts."""
        self.namespaces.require(ident[:-1])
        prefix = f"Cannot rename {display(renaming)} to {display(ident)}. " if renaming is not None else ""
        if self.exists(ident):
            raise ViewAlreadyExistsError(
                f"{prefix}View already exists" if prefix else f"View already exists: {display(ident)}"
            )
        if self.table_exists(ident):
            raise ViewAlreadyExistsError(
                f"{prefix}Table already exists" if prefix else f"Table with same name already exists: {display(ident)}"
            )

    def _write(self, metadata: ViewMetadata, previous: str | None) -> str:
        """Write the next metadata file: under ``write.metadata.path`` if set (as Java's view operations do,
        checked inside the storage roots by the caller), else under ``<location>/metadata``."""
        directory = metadata.properties.get("write.metadata.path", "").rstrip("/") or f"{metadata.location}/metadata"
        location = f"{directory}/{new_metadata_file_name(previous)}"
        with self._io(location).new_output(location).create(overwrite=False) as out:
            out.write(metadata.model_dump_json().encode("utf-8"))
        return location

    def _insert(self, ident: Identifier, location: str, action: str) -> None:
        """The catalog row of a new view, audited as ``action`` (raises IntegrityError when the name is taken)."""
        with self.catalog.engine.begin() as conn:
            conn.execute(
                insert(VIEWS).values(
                    catalog_name=self.catalog.name,
                    view_namespace=namespace_key(ident[:-1]),
                    view_name=ident[-1],
                    metadata_location=location,
                    previous_metadata_location=None,
                )
            )
            audit.record(conn, action, table(*ident), metadata=location)

    def create(self, ident: Identifier, body: CreateViewBody) -> tuple[str, ViewMetadata]:
        with self.lock:
            self._check_free(ident)
            metadata = new_view_metadata(body, body.location or self.namespaces.default_location(ident))
            self.roots.check_all(metadata.location, metadata.properties, f"view {display(ident)}")
            location = self._write(metadata, None)
            try:
                self._insert(ident, location, "create-view")
            except IntegrityError as exc:
                raise ViewAlreadyExistsError(f"View already exists: {display(ident)}") from exc
            return location, metadata

    def commit(
        self, ident: Identifier, requirements: Sequence[AssertViewUUID], updates: Sequence[Any]
    ) -> tuple[str, ViewMetadata]:
        """Replace a view's definition (requirements checked, compare-and-swap on the row)."""
        with self.lock:
            previous, base = self.load(ident)
            metadata = apply_view_commit(base, requirements, updates)
            if metadata == base:
                return previous, base
            self.roots.check_all(metadata.location, metadata.properties, f"view {display(ident)}")
            location = self._write(metadata, previous)
            with self.catalog.engine.begin() as conn:
                result = conn.execute(
                    update(VIEWS)
                    .where(*self._where(ident), VIEWS.c.metadata_location == previous)
                    .values(metadata_location=location, previous_metadata_location=previous)
                )
                if result.rowcount != 1:
                    raise CommitFailedException(f"View {display(ident)} was changed concurrently; retry")
                audit.record(conn, "replace-view", table(*ident), metadata=location, previous=previous)
            return location, metadata

    def drop(self, ident: Identifier) -> None:
        with self.lock, self.catalog.engine.begin() as conn:
            if conn.execute(delete(VIEWS).where(*self._where(ident))).rowcount != 1:
                raise NoSuchViewError(f"View does not exist: {display(ident)}")
            self.access.forget_object(conn, table(*ident))
            audit.record(conn, "drop-view", table(*ident))

    def rename(self, source: Identifier, destination: Identifier) -> None:
        with self.lock:
            if not self.exists(source):
                raise NoSuchViewError(f"View does not exist: {display(source)}")
            self._check_free(destination, renaming=source)
            with self.catalog.engine.begin() as conn:
                conn.execute(
                    update(VIEWS)
                    .where(*self._where(source))
                    .values(view_namespace=namespace_key(destination[:-1]), view_name=destination[-1])
                )
                self.access.forget_object(conn, table(*source), renamed=table(*destination))
                audit.record(conn, "rename-view", table(*destination), source=list(source))

    def register(self, ident: Identifier, metadata_location: str) -> ViewMetadata:
        self.roots.check(metadata_location, f"the metadata of view {display(ident)}")
        try:
            metadata = self.read(metadata_location)
        except (OSError, ValueError, *INPUT_FAULTS) as exc:
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            raise BadRequest(f"Cannot read view metadata at {metadata_location!r}: {reason}") from None
        self.roots.check_all(metadata.location, metadata.properties, f"view {display(ident)}")
        with self.lock:
            self._check_free(ident)
            self._insert(ident, metadata_location, "register-view")
        return metadata
