"""Refresh leases under grants: a commit to the lease table changes only the leases of tables its principal may write.

Every kernel and runner writes the whole lease map (:mod:`mt_magic.catalog.leases`) as the summary of a new snapshot
of ``mt_magic.refresh_leases``, carrying the others' leases unchanged. So the authorizer compares the snapshot a
commit adds with the one it asserts it replaces, entry by entry: each lease added, changed (taken, renewed, asked
for) or removed needs write on its materialized table. A commit that does anything else to the lease table (a
property, another ref, two snapshots) needs write on the lease table itself. Every principal may read the lease
table and create it (with the client's own settings, no location of its own) when it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from mt_magic.catalog.leases import LEASE_KEY, LEASE_NAMESPACE, LEASE_TABLE, LEASE_TABLE_PROPERTIES, Lease
from mt_magic.catalog.privileges import Securable, table

LEASES = (LEASE_NAMESPACE, LEASE_TABLE)
LEASE_TABLE_OBJECT = table(*LEASES)
_LEASE_UPDATES = frozenset({"add-snapshot", "set-snapshot-ref", "remove-snapshots"})
_CREATE_PROPERTIES = frozenset(LEASE_TABLE_PROPERTIES) | {"format-version"}


def is_plain_lease_table(body: Mapping[str, Any]) -> bool:
    """Whether a create request for the lease table asks for what the client's own creation asks (no location,
    only the lease table's properties)."""
    properties = body.get("properties") or {}
    return not body.get("location") and isinstance(properties, dict) and set(properties) <= _CREATE_PROPERTIES


def entries(summary: Mapping[str, Any]) -> dict[str, str]:
    """The lease map of a snapshot summary, as written: materialized table name -> encoded lease."""
    return {key[len(LEASE_KEY) :]: str(value) for key, value in summary.items() if key.startswith(LEASE_KEY)}


def _summary_of(metadata: TableMetadata, snapshot_id: int | None) -> dict[str, Any] | None:
    if snapshot_id is None:
        return {}
    for snapshot in metadata.snapshots:
        if snapshot.snapshot_id == snapshot_id:
            return dict(snapshot.summary.additional_properties) if snapshot.summary else {}
    return None


def current_entries(metadata: TableMetadata | None) -> dict[str, str]:
    if metadata is None:
        return {}
    return entries(_summary_of(metadata, metadata.current_snapshot_id) or {})


def table_of(name: str) -> Securable | None:
    """The table a lease names (``<spark catalog>.<namespace>.<table>``), ``None`` when it names none."""
    parts = name.split(".")
    return table(*parts[1:]) if len(parts) >= 3 and all(parts) else None


def changed(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The tables whose lease differs between two maps, sorted."""
    return sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))


def commit_needs(body: Mapping[str, Any], metadata: TableMetadata) -> list[Securable]:
    """The tables on which a commit to the lease table needs write (the lease table itself when the commit is not a
    plain change of the map)."""
    requirements = body.get("requirements") or []
    updates = body.get("updates") or []
    if not isinstance(requirements, list) or not isinstance(updates, list):
        return [LEASE_TABLE_OBJECT]
    base = [
        r.get("snapshot-id")
        for r in requirements
        if isinstance(r, dict) and r.get("type") == "assert-ref-snapshot-id" and r.get("ref") == "main"
    ]
    actions = [u.get("action") if isinstance(u, dict) else None for u in updates]
    added = [u.get("snapshot") for u in updates if isinstance(u, dict) and u.get("action") == "add-snapshot"]
    if len(base) != 1 or not set(actions) <= _LEASE_UPDATES or len(added) != 1 or not isinstance(added[0], dict):
        return [LEASE_TABLE_OBJECT]
    new_id = added[0].get("snapshot-id")
    for update in updates:
        if update.get("action") == "set-snapshot-ref" and (
            update.get("ref-name") != "main" or update.get("snapshot-id") != new_id
        ):
            return [LEASE_TABLE_OBJECT]
    before = _summary_of(metadata, base[0])
    summary = added[0].get("summary")
    if before is None or not isinstance(summary, dict):
        return [LEASE_TABLE_OBJECT]
    needs = []
    for name in changed(entries(before), entries(summary)):
        found = table_of(name)
        needs.append(found if found is not None else LEASE_TABLE_OBJECT)
    return needs


def audited(before: Mapping[str, str], after: Mapping[str, str]) -> list[tuple[str, Securable, dict[str, Any]]]:
    """The audit rows of a change of the lease map: a lease taken (``from``: the holder that lost it) or released;
    a renewal, or a request to hand one over, is none."""
    rows: list[tuple[str, Securable, dict[str, Any]]] = []
    for name in changed(before, after):
        on = table_of(name) or LEASE_TABLE_OBJECT
        old = Lease.decode(name, before[name]) if name in before else None
        new = Lease.decode(name, after[name]) if name in after else None
        if new is None and old is not None:
            rows.append(("lease-released", on, {"holder": old.holder, "lease": name}))
        elif new is not None and (old is None or old.holder != new.holder):
            rows.append(("lease-taken", on, {"holder": new.holder, "from": old.holder if old else None, "lease": name}))
    return rows
