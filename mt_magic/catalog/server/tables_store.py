"""Tables in the SQL catalog database: load, create, commit (with compare-and-swap), drop, rename, register.

The rows are pyiceberg ``SqlCatalog``'s own ``iceberg_tables`` table, so a database written here is a valid
pyiceberg SQL catalog and vice versa. Commits do not go through ``SqlCatalog.commit_table`` because the
server needs more than it offers: Java's id-reuse rules (:mod:`mt_magic.catalog.server.commits`), several tables
swapped in one SQL transaction (``/v1/transactions/commit``), and a retry when another process moved the
table between read and swap. Within one server, writes are serialized by a lock; across processes the
``UPDATE … WHERE metadata_location = <read>`` compare-and-swap keeps every commit or rejects it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pyiceberg.catalog import WAREHOUSE_LOCATION, delete_files
from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError, TableAlreadyExistsError
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import TableRequirement
from pyiceberg.typedef import Identifier
from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from mt_magic.catalog.privileges import table
from mt_magic.catalog.server import audit, lease_rules
from mt_magic.catalog.server.access_store import AccessStore
from mt_magic.catalog.server.commits import apply_commit, check_format_version, is_create, metadata_version
from mt_magic.catalog.server.errors_http import INPUT_FAULTS, BadRequest
from mt_magic.catalog.server.format_v3 import read_metadata, with_column_defaults, with_row_lineage, write_metadata
from mt_magic.catalog.server.locations import Place, StorageRoots, resolved, table_places
from mt_magic.catalog.server.names import namespace_from_storage, namespace_key
from mt_magic.catalog.server.namespaces import NamespaceStore
from mt_magic.catalog.server.own_places import TableFolders, TablesFolders, check_own_places, view_folder
from mt_magic.catalog.server.purge import purge_table
from mt_magic.catalog.server.register import check_not_anothers
from mt_magic.catalog.server.table_updates import AnyTableUpdate
from mt_magic.catalog.server.views_store import VIEWS
from mt_magic.catalog.server.wire import CreateTableBody, display

_T = cast(Table, IcebergTables.__table__)
MAX_CAS_ATTEMPTS = 5
CACHED_TABLES = 256
"""Tables whose newest metadata the server keeps parsed."""


@dataclass(frozen=True)
class TableChange:
    """One table's part of a commit: what the client requires and what it changes."""

    ident: Identifier
    requirements: tuple[TableRequirement, ...]
    updates: tuple[AnyTableUpdate, ...]


@dataclass(frozen=True)
class _Staged:
    ident: Identifier
    previous: str | None
    location: str
    metadata: TableMetadata
    changed: bool
    before: TableMetadata | None = None
    """The metadata it replaces (for the audit: the snapshot before)."""
    updates: tuple[str, ...] = ()
    """The commit's update actions (for the audit of a change without a new snapshot)."""


class _SwapConflict(Exception):
    """Another process replaced a table's metadata between our read and our swap."""


class TableStore:
    """Table operations over one ``SqlCatalog``; all writes hold ``lock``."""

    def __init__(
        self,
        catalog: SqlCatalog,
        namespaces: NamespaceStore,
        lock: threading.RLock,
        view_exists: Callable[[Identifier], bool],
        roots: StorageRoots,
        access: AccessStore,
    ) -> None:
        self.catalog = catalog
        self.access = access
        self.namespaces = namespaces
        self.lock = lock
        self.view_exists = view_exists
        self.roots = roots
        self._latest: OrderedDict[str, tuple[str, TableMetadata]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._folders = TablesFolders(self._read_cached)

    # -- reading ---------------------------------------------------------------------------------
    def _where(self, ident: Identifier) -> tuple[Any, ...]:
        return (
            _T.c.catalog_name == self.catalog.name,
            _T.c.table_namespace == namespace_key(ident[:-1]),
            _T.c.table_name == ident[-1],
        )

    def _io(self, location: str) -> FileIO:
        return load_file_io(self.catalog.properties, location)

    def _read_metadata(self, location: str) -> TableMetadata:
        return read_metadata(self._io(location), location)

    def _read_cached(self, location: str) -> TableMetadata:
        """The metadata at ``location``, parsed once while it is its table's newest one read.

        One entry per table (keyed by its metadata directory), for the last :data:`CACHED_TABLES` tables read: a
        cache keyed by file kept hundreds of old versions of a busy table, each holding its whole snapshot list
        (the embedded server grew by 200 MB in 7 minutes under one append a second).
        """
        table_dir = location.rsplit("/metadata/", 1)[0]
        with self._cache_lock:
            hit = self._latest.get(table_dir)
            if hit is not None and hit[0] == location:
                self._latest.move_to_end(table_dir)
                return hit[1]
        metadata = self._read_metadata(location)
        with self._cache_lock:
            self._latest[table_dir] = (location, metadata)
            self._latest.move_to_end(table_dir)
            while len(self._latest) > CACHED_TABLES:
                self._latest.popitem(last=False)
        return metadata

    def location_of(self, ident: Identifier) -> str | None:
        """The current metadata file of a table, ``None`` if there is no such table."""
        with self.catalog.engine.connect() as conn:
            return conn.execute(select(_T.c.metadata_location).where(*self._where(ident))).scalar_one_or_none()

    def load(self, ident: Identifier) -> tuple[str, TableMetadata]:
        """(metadata location, metadata) of a table. Raises NoSuchTableError."""
        location = self.location_of(ident)
        if location is None:
            raise NoSuchTableError(f"Table does not exist: {display(ident)}")
        return location, self._read_cached(location)

    def list_tables(self, namespace: Identifier) -> list[Identifier]:
        """Tables directly in a namespace, sorted. Raises NoSuchNamespaceError."""
        self.namespaces.require(namespace)
        stmt = select(_T.c.table_name).where(
            _T.c.catalog_name == self.catalog.name, _T.c.table_namespace == namespace_key(namespace)
        )
        with self.catalog.engine.connect() as conn:
            return [(*namespace, name) for name in sorted(conn.execute(stmt).scalars())]

    def locations(self, namespace: Identifier | None = None) -> list[tuple[Identifier, str]]:
        """(identifier, current metadata file) of every table, or of those directly in ``namespace``, sorted: one
        query, no metadata read (what :func:`~mt_magic.catalog.server.routes_tables.table_etags` answers)."""
        stmt = select(_T.c.table_namespace, _T.c.table_name, _T.c.metadata_location).where(
            _T.c.catalog_name == self.catalog.name
        )
        if namespace is not None:
            stmt = stmt.where(_T.c.table_namespace == namespace_key(namespace))
        with self.catalog.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        found = [((*namespace_from_storage(tuple(ns.split("."))), name), location) for ns, name, location in rows]
        return sorted((ident, location) for ident, location in found if location)

    def tables_folders(self) -> list[TableFolders]:
        """(table, location, folders with links resolved) of every table (:class:`~.own_places.TablesFolders`)."""
        return self._folders.current(self.locations())

    def check_own_places(self, ident: Identifier, location: str, properties: Mapping[str, str]) -> None:
        """Refuse a table's folders when they reach another table's or view's, hold a namespace's folder or the
        warehouse root (:mod:`~mt_magic.catalog.server.own_places`): 403 with a Fix."""
        others: list[tuple[str, Sequence[Place | None]]] = [
            (f"table {display(other)}", places) for other, _, places in self.tables_folders() if other != ident
        ]
        with self.catalog.engine.connect() as conn:
            views = conn.execute(select(VIEWS.c.metadata_location).where(VIEWS.c.catalog_name == self.catalog.name))
            others += [(f"a view at {v!r}", [resolved(view_folder(v))]) for v in views.scalars()]
        warehouse = self.catalog.properties.get(WAREHOUSE_LOCATION)
        folders = [("the warehouse", warehouse)] if warehouse else []
        folders += [(f"namespace {display(ns)}", folder) for ns, folder in self.namespaces.folders()]
        check_own_places(f"table {display(ident)}", table_places(location, properties), others, folders)

    # -- creating --------------------------------------------------------------------------------
    def _check_free(self, ident: Identifier, renaming: Identifier | None = None) -> None:
        """The name is free for a new table (``renaming``: for that table's new name); Java's texts."""
        self.namespaces.require(ident[:-1])
        prefix = f"Cannot rename {display(renaming)} to {display(ident)}. " if renaming is not None else ""
        if self.location_of(ident) is not None:
            raise TableAlreadyExistsError(
                f"{prefix}Table already exists" if prefix else f"Table already exists: {display(ident)}"
            )
        if self.view_exists(ident):
            raise TableAlreadyExistsError(
                f"{prefix}View already exists" if prefix else f"View with same name already exists: {display(ident)}"
            )

    def new_metadata(self, ident: Identifier, request: CreateTableBody) -> TableMetadata:
        """Fresh metadata (new field ids, uuid) for a create request, written nowhere yet.

        Raises:
            BadRequest: the schema, spec or order do not fit together, or the format version is unknown.
            RestError: 403 when the location or a path property is outside the storage roots.
        """
        self._check_free(ident)
        location = (request.location or self.namespaces.default_location(ident)).rstrip("/")
        self.roots.check_all(location, request.properties, f"table {display(ident)}")
        self.check_own_places(ident, location, request.properties)
        check_format_version(request.properties.get("format-version", "2"))
        try:
            metadata = new_table_metadata(
                schema=request.table_schema,
                partition_spec=request.partition_spec or UNPARTITIONED_PARTITION_SPEC,
                sort_order=request.write_order or UNSORTED_SORT_ORDER,
                location=location,
                properties=dict(request.properties),
            )
            return with_column_defaults(with_row_lineage(metadata, None, []), request.table_schema)
        except INPUT_FAULTS as exc:
            raise BadRequest(f"Invalid table {display(ident)}: {type(exc).__name__}: {exc}") from None

    def create(self, ident: Identifier, request: CreateTableBody) -> tuple[str, TableMetadata]:
        """Create a table now (not staged). Raises TableAlreadyExistsError, NoSuchNamespaceError."""
        with self.lock:
            metadata = self.new_metadata(ident, request)
            staged = self._write(_Staged(ident, None, self._next_location(metadata, None), metadata, True))
            self._swap([staged], "create")
            return staged.location, metadata

    # -- committing ------------------------------------------------------------------------------
    def commit(self, changes: Sequence[TableChange]) -> list[tuple[str, TableMetadata]]:
        """Apply changes to one or more tables atomically: all are committed or none.

        Raises:
            NoSuchTableError: a table does not exist and the change does not create it.
            CommitFailedException: a requirement failed, or the tables kept changing under us.
            TableAlreadyExistsError: a create-through-commit lost the race for its name.
        """
        idents = [c.ident for c in changes]
        if len(set(idents)) != len(idents):
            raise BadRequest("A transaction may change each table only once")
        with self.lock:
            for _ in range(MAX_CAS_ATTEMPTS):
                staged = [self._stage(change) for change in changes]
                written = [self._write(s) for s in staged]
                try:
                    self._swap(written)
                except _SwapConflict:
                    self._discard(written)
                    continue
                except BaseException:
                    self._discard(written)
                    raise
                for s in written:
                    self._after_commit(s)
                return [(s.location, s.metadata) for s in written]
        raise CommitFailedException(f"Tables {[display(i) for i in idents]} kept changing; retry the commit")

    def _stage(self, change: TableChange) -> _Staged:
        creating = is_create(change.requirements)
        previous = self.location_of(change.ident)
        if previous is None and not creating:
            raise NoSuchTableError(f"Table does not exist: {display(change.ident)}")
        if creating and previous is None:
            self._check_free(change.ident)
        current = self._read_cached(previous) if previous else None
        metadata = apply_commit(current, previous, change.requirements, change.updates)
        if current is not None and metadata == current:
            return _Staged(change.ident, previous, previous, current, changed=False)  # type: ignore[arg-type]
        self.roots.check_all(metadata.location, metadata.properties, f"table {display(change.ident)}")
        places = table_places(metadata.location, metadata.properties)
        if current is None or table_places(current.location, current.properties) != places:
            self.check_own_places(change.ident, metadata.location, metadata.properties)
        actions = tuple(str(getattr(u, "action", type(u).__name__)) for u in change.updates)
        location = self._next_location(metadata, previous)
        return _Staged(change.ident, previous, location, metadata, True, current, actions)

    @staticmethod
    def _next_location(metadata: TableMetadata, previous: str | None) -> str:
        provider = load_location_provider(metadata.location, metadata.properties)
        return provider.new_table_metadata_file_location(metadata_version(previous) + 1)

    def _write(self, staged: _Staged) -> _Staged:
        if staged.changed:
            write_metadata(staged.metadata, self._io(staged.location), staged.location)
        return staged

    def _discard(self, staged: Sequence[_Staged]) -> None:
        for s in staged:
            if s.changed:
                delete_files(self._io(s.location), {s.location}, "metadata")

    def _swap(self, staged: Sequence[_Staged], action: str | None = None) -> None:
        """Point every table at its new metadata in one SQL transaction (compare-and-swap per table), with each
        change's audit rows (``action``: what a new row is, ``create`` or ``register``; else a commit).

        Rows are updated in identifier order, so two servers swapping the same tables never deadlock.
        """
        with self.catalog.engine.begin() as conn:
            for s in sorted(staged, key=lambda s: s.ident):
                if not s.changed:
                    continue
                if s.previous is None:
                    try:
                        conn.execute(
                            insert(_T).values(
                                catalog_name=self.catalog.name,
                                table_namespace=namespace_key(s.ident[:-1]),
                                table_name=s.ident[-1],
                                metadata_location=s.location,
                                previous_metadata_location=None,
                            )
                        )
                    except IntegrityError as exc:
                        raise TableAlreadyExistsError(f"Table already exists: {display(s.ident)}") from exc
                    self._audit(conn, s, action or "create")
                    continue
                result = conn.execute(
                    update(_T)
                    .where(*self._where(s.ident), _T.c.metadata_location == s.previous)
                    .values(metadata_location=s.location, previous_metadata_location=s.previous)
                )
                if result.rowcount != 1:
                    raise _SwapConflict(display(s.ident))
                self._audit(conn, s, action)

    def _audit(self, conn: Connection, s: _Staged, action: str | None) -> None:
        """The audit rows of one swapped table: created or registered; a commit (snapshot before and after) or an
        alter (the update actions); for the lease table, the leases taken and released."""
        on = table(*s.ident)
        if action is not None:
            audit.record(conn, action, on, metadata=s.location, previous=s.previous)
            return
        if s.ident == lease_rules.LEASES:
            before, after = lease_rules.current_entries(s.before), lease_rules.current_entries(s.metadata)
            for what, lease_on, details in lease_rules.audited(before, after):
                audit.record(conn, what, lease_on, **details)
            return
        before_id = s.before.current_snapshot_id if s.before is not None else None
        after_id = s.metadata.current_snapshot_id
        if before_id != after_id:
            snapshot = s.metadata.snapshot_by_id(after_id) if after_id is not None else None
            operation = snapshot.summary.operation.value if snapshot is not None and snapshot.summary else None
            audit.record(conn, "commit", on, before=before_id, after=after_id, operation=operation, metadata=s.location)
        else:
            audit.record(conn, "alter", on, updates=sorted(set(s.updates)), snapshot=after_id, metadata=s.location)

    def _after_commit(self, staged: _Staged) -> None:
        """Honour ``write.metadata.delete-after-commit.enabled`` like Java's catalogs do."""
        if not staged.changed or staged.previous is None:
            return
        flag = staged.metadata.properties.get("write.metadata.delete-after-commit.enabled", "false")
        if flag.lower() == "true":
            before = {e.metadata_file for e in self._read_cached(staged.previous).metadata_log}
            kept = {e.metadata_file for e in staged.metadata.metadata_log}
            delete_files(self._io(staged.location), before - kept, "previous metadata")

    # -- dropping, renaming, registering ---------------------------------------------------------
    def drop(self, ident: Identifier, purge: bool) -> None:
        """Remove a table from the catalog; with ``purge`` also delete every file it references."""
        with self.lock:
            location, metadata = self.load(ident)
            with self.catalog.engine.begin() as conn:
                if conn.execute(delete(_T).where(*self._where(ident))).rowcount != 1:
                    raise NoSuchTableError(f"Table does not exist: {display(ident)}")
                on = table(*ident)
                self.access.forget_object(conn, on)
                audit.record(
                    conn, "purge" if purge else "drop", on, metadata=location, snapshot=metadata.current_snapshot_id
                )
        if purge:
            purge_table(self._io(location), self.roots, location, metadata)

    def rename(self, source: Identifier, destination: Identifier) -> None:
        """Rename a table, possibly into another namespace."""
        with self.lock:
            if self.location_of(source) is None:
                raise NoSuchTableError(f"Table does not exist: {display(source)}")
            self._check_free(destination, renaming=source)
            with self.catalog.engine.begin() as conn:
                conn.execute(
                    update(_T)
                    .where(*self._where(source))
                    .values(table_namespace=namespace_key(destination[:-1]), table_name=destination[-1])
                )
                self.access.forget_object(conn, table(*source), renamed=table(*destination))
                audit.record(conn, "rename", table(*destination), source=list(source))

    def register(self, ident: Identifier, metadata_location: str, overwrite: bool) -> TableMetadata:
        """Add an existing metadata file as a table (or repoint one with ``overwrite``)."""
        self.roots.check(metadata_location, f"the metadata of table {display(ident)}")
        try:
            metadata = self._read_cached(metadata_location)
        except (OSError, ValueError, *INPUT_FAULTS) as exc:
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            raise BadRequest(f"Cannot read table metadata at {metadata_location!r}: {reason}") from None
        self.roots.check_all(metadata.location, metadata.properties, f"table {display(ident)}")
        check_format_version(metadata.format_version)
        with self.lock:
            check_not_anothers(ident, metadata_location, metadata, self.tables_folders())
            previous = self.location_of(ident)
            if previous is None or not overwrite:
                self._check_free(ident)
            self._swap([_Staged(ident, previous, metadata_location, metadata, True)], "register")
        return metadata
