"""Materialized-table metadata through an Iceberg catalog (pyiceberg): definitions, snapshots, properties.

Spark does the data; this module reads and writes metadata over the catalog's REST API, which is fast and
needs no Spark job. Names are Spark-style ``catalog.namespace.table`` where ``catalog`` is the name the
catalog has in Spark; pyiceberg identifiers drop that first part.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.definitions import MaterializedTableDefinition, RefreshState
from mt_magic.catalog.errors import NotGrantedError, not_granted
from mt_magic.catalog.revalidation import Revalidated
from mt_magic.errors import (
    CatalogError,
    CatalogUnavailableError,
    NoSuchMaterializedTableError,
    closest_names,
    first_line,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table


log = logging.getLogger(__name__)

LIST_WORKERS = 8
"""Tables a listing asks the catalog about at once (their requests wait on the server, not on this process)."""


ROW_COUNTS = (
    "added-data-files",
    "deleted-data-files",
    "added-records",
    "deleted-records",
    "added-delete-files",
    "removed-delete-files",
    "added-position-deletes",
    "removed-position-deletes",
    "added-equality-deletes",
    "removed-equality-deletes",
    "added-dvs",
    "removed-dvs",
)
"""Summary keys that count the files, rows and deletes a snapshot added or removed
(:attr:`SnapshotInfo.changes_rows`)."""


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot of a table, with the summary as plain strings."""

    snapshot_id: int
    parent_id: int | None
    committed_at: datetime
    operation: str
    summary: Mapping[str, str]
    schema_id: int | None = None
    """The schema the snapshot was written with (``None`` when the metadata does not say)."""

    @property
    def refresh_state(self) -> RefreshState | None:
        return RefreshState.from_summary(self.summary)

    def count(self, key: str) -> int:
        """The summary's count under ``key``, 0 where it keeps none (Iceberg writes only the counts that are not zero,
        and the totals always) or not a count: the one reading of a summary count."""
        raw = self.summary.get(key, "0")
        return int(raw) if raw.isdigit() else 0

    @property
    def changes_data(self) -> bool:
        """Whether the snapshot is a commit of data, not a rewrite of files (compaction, manifest rewrites): an empty
        append counts. Staleness reads it (:meth:`TableInfo.data_changes`: ``mt_status``, ``engine.pending_since``,
        history), as do the planner's TABLE_MODIFIED check and the decision record's change, because the Iceberg
        materialized-view spec's freshness compares source snapshots: a spec reader calls a table over a source
        that appended nothing stale too (``tests/interop/test_mv_spec_agreement.py``)."""
        return self.operation != "replace"

    @property
    def changes_rows(self) -> bool:
        """Whether the snapshot may change the table's rows: :attr:`changes_data`, and its summary counts a file, a
        row or a delete it added or removed (a summary without totals may not count: taken as a change). The
        incremental planner reads it (``incremental/changes.py: classify``): an empty append (an upstream table's
        refresh recording its state) changes no rows, and counted as a change it made a join's other table look
        changed and sent its refresh to Spark where ``%mt explain`` said in process (issue 46)."""
        if not self.changes_data:
            return False
        if "total-records" not in self.summary:
            return True
        return any(self.count(key) for key in ROW_COUNTS)


@dataclass(frozen=True)
class TableInfo:
    """A point-in-time view of one Iceberg table's metadata."""

    name: str
    uuid: str
    current_snapshot_id: int | None
    snapshots: tuple[SnapshotInfo, ...]
    """The current snapshot's ancestry, oldest first (other branches and expired snapshots excluded)."""
    properties: Mapping[str, str]
    columns: tuple[tuple[str, str, bool], ...]
    """(name, Iceberg type, required) in schema order."""
    partition_columns: tuple[str, ...]
    identifier_columns: tuple[str, ...]
    schema_id: int
    known_snapshot_ids: frozenset[int] = frozenset()
    """Every snapshot still in the metadata (all branches), to tell an expired snapshot from a rolled-back one."""
    partition_transforms: tuple[str, ...] = ()
    """The current spec's transform of each of ``partition_columns`` (``identity``, ``day``, ``bucket[16]``)."""
    partition_spec_count: int = 1
    """How many partition specs the table has had (more than one: partitioning evolved)."""
    format_version: int = 2
    """The table's Iceberg format version (metadata, not a property)."""
    iceberg: Any = field(default=None, compare=False, hash=False, repr=False)
    """The pyiceberg ``Table`` this view was read from (``None``: built otherwise): what reads the table's data at
    this point in time uses it (:meth:`MaterializedCatalog.iceberg_table_of`) rather than loading the table again."""

    @cached_property
    def definition(self) -> MaterializedTableDefinition | None:
        """Parsed once per answer: the manager's discovery and polls reuse unchanged answers (``reuse_unchanged``)."""
        return MaterializedTableDefinition.from_properties(self.properties)

    @property
    def namespace(self) -> tuple[str, ...]:
        return tuple(self.name.split(".")[1:-1])

    @property
    def table_name(self) -> str:
        return self.name.split(".")[-1]

    def snapshots_after(self, snapshot_id: int | None) -> tuple[SnapshotInfo, ...] | None:
        """Snapshots committed after ``snapshot_id`` (exclusive), oldest first.

        Returns ``None`` when ``snapshot_id`` is no longer in the current ancestry (expired, or the table was
        rolled back or replaced), i.e. the change since then cannot be known from snapshots.
        """
        if snapshot_id is None:
            return self.snapshots
        for i, snap in enumerate(self.snapshots):
            if snap.snapshot_id == snapshot_id:
                return self.snapshots[i + 1 :]
        return None

    def data_changes(self, after: int | None, upto: int | None = None) -> list[datetime] | None:
        """Commit times of the snapshots after ``after`` (to ``upto`` included, default the current one) that
        changed rows, oldest first — THE staleness rule: a table is as stale as the oldest of these it does not
        reflect. ``None`` when ``after`` left the ancestry (see :meth:`snapshots_after`)."""
        changes = self.snapshots_after(after)
        if changes is None:
            return None
        ids = [snap.snapshot_id for snap in changes]
        if upto is not None:
            changes = changes[: ids.index(upto) + 1] if upto in ids else ()
        return [snap.committed_at for snap in changes if snap.changes_data]

    def last_refresh(self) -> tuple[SnapshotInfo, RefreshState] | None:
        """The newest snapshot carrying a refresh state."""
        for snap in reversed(self.snapshots):
            state = snap.refresh_state
            if state is not None:
                return snap, state
        return None


def _ms_to_dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _ancestry(table: Table) -> tuple[SnapshotInfo, ...]:
    meta = table.metadata
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    chain = []
    current = meta.current_snapshot_id
    while current is not None and current in by_id:
        snap = by_id[current]
        summary = snap.summary
        items = {} if summary is None else {k: str(v) for k, v in summary.additional_properties.items()}
        operation = "append" if summary is None else summary.operation.value
        chain.append(
            SnapshotInfo(
                snap.snapshot_id,
                snap.parent_snapshot_id,
                _ms_to_dt(snap.timestamp_ms),
                operation,
                items,
                snap.schema_id,
            )
        )
        current = snap.parent_snapshot_id
    return tuple(reversed(chain))


def table_info(name: str, table: Table) -> TableInfo:
    """The metadata of a loaded pyiceberg table, as mt_magic reads it."""
    schema = table.schema()
    spec = table.spec()
    return TableInfo(
        name=name,
        uuid=str(table.metadata.table_uuid),
        current_snapshot_id=table.metadata.current_snapshot_id,
        snapshots=_ancestry(table),
        properties=dict(table.properties),
        columns=tuple((f.name, str(f.field_type), f.required) for f in schema.fields),
        partition_columns=tuple(schema.find_column_name(f.source_id) or "" for f in spec.fields),
        identifier_columns=tuple(schema.find_column_name(i) or "" for i in schema.identifier_field_ids),
        schema_id=schema.schema_id,
        known_snapshot_ids=frozenset(s.snapshot_id for s in table.metadata.snapshots),
        partition_transforms=tuple(str(f.transform) for f in spec.fields),
        partition_spec_count=len(table.metadata.partition_specs),
        format_version=int(table.metadata.format_version),
        iceberg=table,
    )


def _namespace(namespace: str | None) -> tuple[str, ...] | None:
    return tuple(namespace.split(".")) if namespace is not None else None


@contextmanager
def reaching(name: str) -> Iterator[None]:
    """Classify transport failures once, here: the catalog could not be reached (connection refused or reset,
    a timeout, a 5xx) becomes :class:`CatalogUnavailableError` — a pause, not a verdict on ``name``; a refusal for
    want of a grant (403) becomes :class:`~mt_magic.catalog.errors.NotGrantedError`, naming the grant and who may
    give it; every other answer keeps its own type."""
    import requests
    from pyiceberg.exceptions import ForbiddenError, ServerError, ServiceUnavailableError

    try:
        yield
    except (requests.ConnectionError, requests.Timeout, ServiceUnavailableError, ServerError) as exc:
        raise CatalogUnavailableError(
            f"the catalog cannot be reached while reading {name} ({type(exc).__name__}: {first_line(exc)[:200]})"
        ) from exc
    except ForbiddenError as exc:
        raise (not_granted(exc) or NotGrantedError(f"the catalog refused access to {name}: {exc}")) from exc


class MaterializedCatalog:
    """Metadata access for materialized tables in one Iceberg catalog.

    Args:
        catalog: an open pyiceberg catalog (REST in practice).
        spark_name: the name this catalog has in Spark (the first part of qualified names).
    """

    def __init__(self, catalog: Catalog, spark_name: str) -> None:
        self.catalog = catalog
        self.spark_name = spark_name
        self._revalidated = Revalidated(catalog, table_info)

    def identifier(self, name: str) -> tuple[str, ...]:
        """pyiceberg identifier of a qualified Spark name in this catalog."""
        parts = name.split(".")
        if parts[0] != self.spark_name or len(parts) < 3:
            raise CatalogError(
                f"{name} is not in catalog {self.spark_name!r}; mt_magic reads table metadata from that catalog "
                f"only. Use tables registered in {self.spark_name}."
            )
        return tuple(parts[1:])

    def iceberg_table(self, name: str) -> Table:
        """The pyiceberg table (for what TableInfo does not carry, e.g. schema evolution).

        Raises:
            NoSuchMaterializedTableError: no such table.
        """
        from pyiceberg.exceptions import NoSuchTableError

        try:
            with reaching(name):
                return self.catalog.load_table(self.identifier(name))
        except NoSuchTableError as exc:
            raise NoSuchMaterializedTableError(
                f"table {name} does not exist in catalog {self.spark_name}",
                fix=f"check the name: SHOW MATERIALIZED TABLES (in a %%materialized cell) lists the materialized "
                f"tables, and an unqualified name is looked up in {name.rsplit('.', 1)[0]}",
            ) from exc

    def iceberg_table_of(self, info: TableInfo) -> Table:
        """The pyiceberg table ``info`` was read from, at that point in time (loaded now only when ``info`` was not
        read from one)."""
        return info.iceberg if info.iceberg is not None else self.iceberg_table(info.name)

    def load(self, name: str, *, reuse_unchanged: bool = False) -> TableInfo:
        """Metadata of any Iceberg table in this catalog.

        Args:
            reuse_unchanged: for a read that repeats (the manager's polls): the last such answer when the catalog
                says the metadata has not changed since (``ETag``, see :mod:`.revalidation`); exact either way.

        Raises:
            NoSuchMaterializedTableError: no such table.
        """
        if reuse_unchanged:
            with reaching(name):
                info = self._revalidated.get(name, self.identifier(name))
            if info is not None:
                return info
        return table_info(name, self.iceberg_table(name))

    def load_materialized(
        self, name: str, *, reuse_unchanged: bool = False
    ) -> tuple[TableInfo, MaterializedTableDefinition]:
        """Metadata and definition of a materialized table (``reuse_unchanged``: see :meth:`load`).

        Raises:
            NoSuchMaterializedTableError: no such table, or it is a plain table.
        """
        info = self.load(name, reuse_unchanged=reuse_unchanged)
        definition = info.definition
        if definition is None:
            raise NoSuchMaterializedTableError(
                f"{name} is a plain Iceberg table, not a materialized table",
                fix=f"name a materialized table (SHOW MATERIALIZED TABLES lists them), or make {name} one in place: "
                f"CREATE MATERIALIZED TABLE {name} WITH ('convert-existing-table' = 'true') … AS SELECT …",
            )
        return info, definition

    def names_near(self, name: str) -> tuple[str, ...]:
        """The tables of ``name``'s namespace (``catalog.namespace.table``), for a "did you mean" when ``name`` is
        not one of them; empty when the namespace cannot be listed."""
        from pyiceberg.exceptions import NoSuchNamespaceError

        namespace = self.identifier(name)[:-1]
        try:
            with reaching(name):
                return tuple(".".join((self.spark_name, *ident)) for ident in self.catalog.list_tables(namespace))
        except NoSuchNamespaceError:
            return ()

    def closest_to(self, name: str) -> list[str]:
        """The table of ``name``'s namespace a typo of ``name`` most likely meant (qualified; empty when none is
        close): the one "did you mean" of a missing table, for statements and query cells alike."""
        namespace, _, table = name.rpartition(".")
        near = closest_names(table, [known.rpartition(".")[2] for known in self.names_near(name)])
        return [f"{namespace}.{close}" for close in near]

    def exists(self, name: str) -> bool:
        with reaching(name):
            return self.catalog.table_exists(self.identifier(name))

    def ping(self) -> None:
        """A cheap request, to tell an unreachable catalog from other failures.

        Raises:
            CatalogUnavailableError: the catalog cannot be reached.
        """
        with reaching(f"catalog {self.spark_name}"):
            self.catalog.list_namespaces()

    def _namespaces(self, parent: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
        try:
            children = self.catalog.list_namespaces(parent)
        except ValueError:  # pyiceberg writes the parent into a format string: one holding "{" or "}" cannot be
            log.warning("the namespaces inside %s cannot be listed (its name holds a brace)", ".".join(parent))
            return  # asked for (its own tables are listed); one such name must not hide the whole catalog
        for ns in children:
            yield tuple(ns)
            yield from self._namespaces(tuple(ns))

    def namespace_exists(self, namespace: str) -> bool:
        """Whether the catalog has this namespace (nested parts joined by '.')."""
        from pyiceberg.exceptions import NoSuchNamespaceError

        with reaching(f"namespace {namespace} of catalog {self.spark_name}"):
            try:
                self.catalog.load_namespace_properties(tuple(namespace.split(".")))
            except NoSuchNamespaceError:
                return False
            return True

    def list_materialized(
        self, namespace: str | None = None, *, reuse_unchanged: bool = False, reuse_last: Collection[str] = ()
    ) -> list[TableInfo]:
        """Every materialized table in the catalog (all namespaces), or in ``namespace`` only (not nested ones).

        ``reuse_unchanged``: for the manager's discovery, which repeats every 30 s, and the statements that need
        every table's sources (DROP's and RENAME's dependents) — each table whose metadata has not changed since the
        last listing is not fetched or parsed again (see :meth:`load`); where the catalog tells every table's ETag
        in one request (the embedded server, :meth:`.Revalidated.etags`) an unchanged table costs no request of its
        own, else one conditional request each. Exact either way: a table created or changed a moment ago is read.
        ``reuse_last``: tables the caller checked recently enough (with ``reuse_unchanged``): listed with their
        last answer, without a request of their own; the listing still says which tables exist.

        Raises:
            CatalogUnavailableError: the catalog cannot be reached (never a shorter list instead).
        """
        from pyiceberg.exceptions import NoSuchTableError

        def answer(ident: tuple[str, ...]) -> TableInfo | None:
            name = ".".join((self.spark_name, *ident))
            try:
                info = self._revalidated.last(name) if name in reuse_last else None
                info = info or (self._revalidated.get(name, ident) if reuse_unchanged else None)
                return info or table_info(name, self.catalog.load_table(ident))
            except NoSuchTableError:  # dropped between list and load
                return None

        with reaching(f"the tables of catalog {self.spark_name}"):
            etags = self._revalidated.etags(_namespace(namespace)) if reuse_unchanged else None
            idents = sorted(etags) if etags is not None else self._list_tables(namespace)
            known: dict[tuple[str, ...], TableInfo | None] = {}
            skipped: set[tuple[str, ...]] = set()
            for ident, etag in (etags or {}).items():  # unchanged since read: no request of its own
                name = ".".join((self.spark_name, *ident))
                known[ident] = self._revalidated.unchanged(name, etag)
                if known[ident] is None and self._revalidated.unloadable(name, etag):
                    skipped.add(ident)
            todo = [ident for ident in idents if known.get(ident) is None and ident not in skipped]
            if len(todo) <= 1:
                known.update((ident, answer(ident)) for ident in todo)
            else:  # one request per table, each mostly waiting on the server: LIST_WORKERS of them at a time
                with ThreadPoolExecutor(min(LIST_WORKERS, len(todo)), thread_name_prefix="mt-list") as pool:
                    known.update(zip(todo, pool.map(answer, todo), strict=True))
            for ident in todo:
                if known[ident] is None and etags is not None:
                    self._revalidated.mark_unloadable(".".join((self.spark_name, *ident)), etags[ident])
        answers = (known[ident] for ident in idents)
        return [info for info in answers if info is not None and info.definition is not None]

    def _list_tables(self, namespace: str | None) -> list[tuple[str, ...]]:
        """The identifiers of every table (all namespaces), or of ``namespace``'s, one listing per namespace."""
        from pyiceberg.exceptions import NoSuchNamespaceError

        idents: list[tuple[str, ...]] = []
        spaces = list(self._namespaces()) if namespace is None else [tuple(namespace.split("."))]
        for ns in spaces:
            try:
                idents.extend(tuple(ident) for ident in self.catalog.list_tables(ns))
            except NoSuchNamespaceError:  # dropped while listing
                continue
        return idents

    def update_properties(
        self,
        name: str,
        updates: Mapping[str, str],
        appended: pa.Schema | None = None,
        tags: Mapping[str, int | None] | None = None,
        loaded: TableInfo | None = None,
    ) -> None:
        """Set table properties in one commit, with ``appended`` columns (optional, by name) in the same commit:
        the new columns and the definition that produces them are committed together or not at all. ``tags``:
        tag name → the snapshot it marks (kept from expiry), or ``None`` to remove the tag, in the same commit.
        ``loaded``: the table as the caller just read it, committed on without loading it again (the commit's
        requirements still catch a schema or tag another writer changed since)."""
        from pyiceberg.table.update.snapshot import ManageSnapshots

        table = self.iceberg_table_of(loaded) if loaded is not None else self.iceberg_table(name)
        with reaching(name), table.transaction() as tx:
            if appended is not None and len(appended):
                with tx.update_schema() as schema:
                    schema.union_by_name(appended)
            tx.set_properties(dict(updates))
            refs = tx.table_metadata.refs
            changed = {t: s for t, s in (tags or {}).items() if (refs[t].snapshot_id if t in refs else None) != s}
            if changed:
                with ManageSnapshots(tx) as snapshots:
                    for tag, snapshot in changed.items():
                        if snapshot is None:
                            snapshots.remove_tag(tag)
                        else:
                            snapshots.create_tag(snapshot, tag)

    def rename(self, name: str, new_name: str) -> None:
        """Rename the table within this catalog (same Iceberg table: data, history and properties stay)."""
        with reaching(name):
            self.catalog.rename_table(self.identifier(name), self.identifier(new_name))

    def drop(self, name: str, purge: bool = True) -> None:
        """Drop the table; with ``purge`` its files too."""
        ident = self.identifier(name)
        with reaching(name):
            if purge:
                self.catalog.purge_table(ident)
            else:
                self.catalog.drop_table(ident)
