"""Refresh leases in the catalog: which process refreshes which materialized table, changed by compare-and-set.

Every lease of a catalog lives in one small Iceberg table, ``mt_magic.refresh_leases``: the summary of its
current snapshot *is* the lease map (``mt.lease.<table>`` → holder, expiry, who asked for it). A change commits a
new, empty snapshot carrying the whole new map, with the Iceberg REST requirement
``assert-ref-snapshot-id(main, <the snapshot it read>)``. The catalog applies a commit only if that requirement
still holds, atomically with the commit (the spec's optimistic concurrency; any REST catalog enforces it), and
snapshot ids are never reused, so of two processes that read the same map and both write, exactly one wins; the
other gets :class:`LeaseConflictError`, reads again and decides again. Plain table properties could not do this:
no REST requirement asserts a property's value, so two property writes both "succeed".

The lease table holds no rows; its snapshots are metadata (a manifest list with no manifests), and all but the
latest :data:`KEPT_SNAPSHOTS` are expired as it goes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.errors import NotGrantedError
from mt_magic.catalog.revalidation import Revalidated
from mt_magic.catalog.tables import reaching
from mt_magic.errors import CatalogError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.io import FileIO
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "mt_magic"
LEASE_TABLE = "refresh_leases"
LEASE_KEY = "mt.lease."
"""Snapshot-summary key prefix; the rest of the key is the materialized table's qualified name."""
GRANTS_KNOWN_SECONDS = 30.0
"""How long this process trusts what the catalog said of its write grants on the tables whose leases it wants (a
grant or a revocation reaches the lease map within this)."""
KEPT_SNAPSHOTS = 2
"""Each snapshot's summary is the whole map: every write copies and every load parses all kept ones, so few are
kept (a compare-and-set needs only the current one)."""
LEASE_TABLE_PROPERTIES = {
    "comment": "mt_magic refresh leases: the current snapshot's summary holds them (no rows)",
    "write.metadata.previous-versions-max": "10",
    "gc.enabled": "false",
}


class LeaseConflictError(CatalogError):
    """Another process changed the refresh leases since they were read; read them again and decide again."""


@dataclass(frozen=True)
class Lease:
    """Who refreshes one materialized table, until when."""

    table: str
    holder: str
    """The refreshing process: its role, pid, host and a random token (unique per manager)."""
    expires_at: datetime
    """The holder renews well before; after it, anyone may take the lease (the holder died or lost the catalog)."""
    wanted_by: str = ""
    """A process with a manual refresh waiting asked for the lease: the holder hands it over once idle."""

    def live(self, now: datetime) -> bool:
        return now < self.expires_at

    def encode(self) -> str:
        return json.dumps(
            {"holder": self.holder, "expires-ms": int(self.expires_at.timestamp() * 1000), "wanted-by": self.wanted_by},
            sort_keys=True,
        )

    @classmethod
    def decode(cls, table: str, text: str) -> Lease | None:
        try:
            data = json.loads(text)
            expires = datetime.fromtimestamp(int(data["expires-ms"]) / 1000, tz=timezone.utc)
            return cls(table, str(data["holder"]), expires, str(data.get("wanted-by", "")))
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring an unreadable lease of %s: %r", table, text)
            return None


@dataclass(frozen=True)
class LeaseMap:
    """The leases as read, with the version a write must still find (the lease table's current snapshot)."""

    version: int | None
    leases: Mapping[str, Lease]
    table: Any = field(default=None, compare=False, repr=False)
    """The loaded lease table (the store's own handle for the next write)."""


class CatalogLeases:
    """The lease map of one catalog, read and written over its REST API (pyiceberg; no Spark).

    Args:
        catalog: an open pyiceberg catalog.
        spark_name: the catalog's name in Spark (for messages).
    """

    def __init__(self, catalog: Catalog, spark_name: str) -> None:
        self.catalog = catalog
        self.spark_name = spark_name
        self.identifier = (LEASE_NAMESPACE, LEASE_TABLE)
        self._revalidated = Revalidated(catalog, self._decode)
        """Each manager reads the map every few seconds and it changes every ten or so: an unchanged map is
        answered ``304`` to its last ``ETag`` and neither sent nor parsed again (see :mod:`.revalidation`)."""
        self._unrestricted: bool | None = None
        """This principal is the catalog's admin, or the catalog has no grants: its leases need no question."""
        self._writable: dict[str, tuple[bool, float]] = {}
        """Lease name -> (whether this principal may write its table, until when that is trusted)."""

    def _table(self) -> Table:
        from pyiceberg.exceptions import NoSuchTableError
        from pyiceberg.schema import Schema
        from pyiceberg.types import NestedField, StringType

        with reaching(f"the refresh leases of catalog {self.spark_name}"):
            try:
                return self.catalog.load_table(self.identifier)
            except NoSuchTableError:
                self.catalog.create_namespace_if_not_exists(LEASE_NAMESPACE)
                schema = Schema(NestedField(1, "note", StringType(), required=False))
                return self.catalog.create_table_if_not_exists(
                    self.identifier, schema, properties=LEASE_TABLE_PROPERTIES
                )

    def read(self) -> LeaseMap:
        """The current lease map (creating the empty lease table on first use).

        Raises:
            CatalogUnavailableError: the catalog cannot be reached.
        """
        with reaching(f"the refresh leases of catalog {self.spark_name}"):
            unchanged = self._revalidated.get(LEASE_TABLE, self.identifier)
        return unchanged if unchanged is not None else self._decode(LEASE_TABLE, self._table())

    @staticmethod
    def _decode(_: str, table: Table) -> LeaseMap:
        snapshot = table.current_snapshot()
        if snapshot is None or snapshot.summary is None:
            return LeaseMap(None, {}, table)
        leases = {}
        for key, value in snapshot.summary.additional_properties.items():
            if key.startswith(LEASE_KEY):
                lease = Lease.decode(key[len(LEASE_KEY) :], str(value))
                if lease is not None:
                    leases[lease.table] = lease
        return LeaseMap(snapshot.snapshot_id, leases, table)

    def write(self, base: LeaseMap, leases: Mapping[str, Lease]) -> LeaseMap:
        """Replace the lease map ``base`` with ``leases`` — only if nobody changed it since ``base`` was read.

        One commit: the new snapshot (its summary the map, its manifest list empty), ``main`` moved to it under the
        requirement that ``main`` is still at ``base``'s snapshot, and all but the latest :data:`KEPT_SNAPSHOTS`
        removed. Written directly rather than through a pyiceberg transaction, which copied the whole metadata a
        dozen times per write (a third of an idle kernel's CPU with 500 leases, issue 37).

        Raises:
            LeaseConflictError: the map changed since ``base`` (nothing was written).
            CatalogUnavailableError: the catalog cannot be reached (the write may or may not have happened).
        """
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.table import Table
        from pyiceberg.table.update import AssertRefSnapshotId, AssertTableUUID

        with reaching(f"the refresh leases of catalog {self.spark_name}"):
            leases = self._permitted(base, leases)
        if dict(leases) == dict(base.leases):
            return base
        table = base.table if base.table is not None else self._table()
        if table.metadata.current_snapshot_id != base.version:
            raise LeaseConflictError(f"the refresh leases of catalog {self.spark_name} changed since they were read")
        snapshot, updates, removed = _next_snapshot(table, leases)
        requirements = (
            AssertTableUUID(uuid=table.metadata.table_uuid),
            AssertRefSnapshotId(ref="main", snapshot_id=base.version),  # type: ignore[call-arg]
        )
        try:
            with reaching(f"the refresh leases of catalog {self.spark_name}"):
                response = self.catalog.commit_table(table, requirements, updates)
        except CommitFailedException as exc:
            _delete_unlogged_metadata(table.io, {snapshot.manifest_list})  # written for a commit that never was
            raise LeaseConflictError(
                f"the refresh leases of catalog {self.spark_name} changed since they were read ({exc})"
            ) from exc
        except NotGrantedError as exc:  # a grant revoked since it was asked: ask again, then plan again
            _delete_unlogged_metadata(table.io, {snapshot.manifest_list})
            self._writable.clear()
            raise LeaseConflictError(f"the catalog refused a change of the refresh leases: {exc}") from exc
        written = Table(self.identifier, response.metadata, response.metadata_location, table.io, self.catalog)
        dropped = _logged(table.metadata_location, table.metadata.metadata_log) - _logged(
            written.metadata_location, written.metadata.metadata_log
        )
        _delete_unlogged_metadata(table.io, dropped | {old.manifest_list for old in removed})
        return LeaseMap(snapshot.snapshot_id, dict(leases), written)

    def _permitted(self, base: LeaseMap, leases: Mapping[str, Lease]) -> dict[str, Lease]:
        """``leases`` without the changes this principal may not make: the catalog lets a principal change a
        table's lease only with write on that table (:mod:`mt_magic.catalog.server.lease_rules`), so a lease it
        may not take, renew or clear stays as ``base`` has it (this manager then never holds it)."""
        import time

        from mt_magic.catalog.access import missing_grants, unrestricted
        from mt_magic.catalog.privileges import Privilege, table

        if self._unrestricted is None:
            self._unrestricted = unrestricted(self.catalog)
        if self._unrestricted:
            return dict(leases)
        changed = [n for n in set(base.leases) | set(leases) if base.leases.get(n) != leases.get(n)]
        now = time.monotonic()
        unknown = [n for n in changed if n not in self._writable or self._writable[n][1] < now]
        if unknown:
            needs = {n: (Privilege.WRITE, table(*n.split(".")[1:])) for n in unknown if len(n.split(".")) >= 3}
            refused = {(m.on.parts) for m in missing_grants(self.catalog, list(needs.values()))}
            for name in unknown:
                ok = name in needs and tuple(name.split(".")[1:]) not in refused
                self._writable[name] = (ok, now + GRANTS_KNOWN_SECONDS)
        out = dict(leases)
        for name in changed:
            if not self._writable[name][0]:
                if name in base.leases:
                    out[name] = base.leases[name]
                else:
                    out.pop(name, None)
        return out


def _next_snapshot(table: Table, leases: Mapping[str, Lease]) -> tuple[Snapshot, tuple[Any, ...], list[Snapshot]]:
    """The lease map's next snapshot (its empty manifest list written), the updates that commit it, and the old
    snapshots those updates remove (all but the latest :data:`KEPT_SNAPSHOTS`, counting the new one)."""
    import uuid

    from pyiceberg.manifest import write_manifest_list
    from pyiceberg.table.metadata import _generate_snapshot_id
    from pyiceberg.table.refs import SnapshotRefType
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary
    from pyiceberg.table.update import AddSnapshotUpdate, RemoveSnapshotsUpdate, SetSnapshotRefUpdate

    metadata = table.metadata
    snapshot_id, parent = _generate_snapshot_id(), metadata.current_snapshot_id
    sequence_number = metadata.next_sequence_number()
    path = table.location_provider().new_metadata_location(f"snap-{snapshot_id}-0-{uuid.uuid4()}.avro")
    with write_manifest_list(
        metadata.format_version, table.io.new_output(path), snapshot_id, parent, sequence_number, "deflate"
    ) as writer:
        writer.add_manifests([])
    summary = {LEASE_KEY + name: lease.encode() for name, lease in sorted(leases.items())}
    snapshot = Snapshot(  # type: ignore[call-arg]
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent,
        sequence_number=sequence_number,
        manifest_list=path,
        summary=Summary(Operation.APPEND, **summary),
        schema_id=metadata.current_schema_id,
    )
    kept = sorted(metadata.snapshots, key=lambda s: s.timestamp_ms)[-(KEPT_SNAPSHOTS - 1) :]
    removed = [s for s in metadata.snapshots if s not in kept and s.snapshot_id != parent]
    updates: tuple[Any, ...] = (
        AddSnapshotUpdate(snapshot=snapshot),
        SetSnapshotRefUpdate(ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=snapshot_id),  # type: ignore[call-arg]
    )
    if removed:
        updates += (RemoveSnapshotsUpdate(snapshot_ids=[s.snapshot_id for s in removed]),)  # type: ignore[call-arg]
    return snapshot, updates, removed


def _logged(location: str, log_entries: list[Any]) -> set[str]:
    return {location, *(entry.metadata_file for entry in log_entries)}


def _delete_unlogged_metadata(io: FileIO, dropped: set[str]) -> None:
    """Delete the lease table's metadata files that dropped out of its log (a write every few seconds would
    otherwise leave one file each; ``write.metadata.previous-versions-max`` bounds the log, not the files)."""
    for location in dropped:
        try:
            io.delete(location)
        except Exception:  # deleted already (by the catalog, or another holder)
            pass
