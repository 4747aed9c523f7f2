"""Whether a source's change reaches a data file whose STRING bound Iceberg wrote as other text, on a column the
query compares (issue 46).

Iceberg decodes a Parquet min or max that is not valid UTF-8 as text, U+FFFD for the stray bytes: a file holding 'é'
(C3 A9) and ``CAST(unhex('C328') AS STRING)`` gets the lower bound U+FFFD '(' (EF BF BD 28), above 'é', so a pushed
``s = 'é'`` skips the file that holds it. Spark's answer then depends on which files hold the rows: an append scan
reads the appended file, the query at the pinned snapshot the file a compaction wrote from it. Where a file the
change added or removed (a compaction's included), or a file whose rows a delete file removes, has such a bound on a
column a condition of the query names (:func:`mt_magic.sql.query.filtered_columns.filtered_columns`), only the
query itself gives Spark's answer, so the refresh recomputes; any other change keeps its strategy, text that is not
UTF-8 included.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any

from mt_magic.catalog.tables import SnapshotInfo, TableInfo
from mt_magic.runtime.refresh.incremental.changes import DELETE_FILE_KEYS, SourceChange

REPLACED = "\ufffd".encode()
"""U+FFFD as UTF-8: what Iceberg writes into a STRING bound for the bytes of a value that is not valid UTF-8."""

FILE_COUNTS = ("added-data-files", "deleted-data-files")
"""Summary keys that count the data files a snapshot added or removed: a snapshot counting none changed no bounds."""


def replaced_bound(
    sources: Sequence[TableInfo], changes: Sequence[SourceChange], compared: Collection[str]
) -> str | None:
    """The first ``source.column`` whose change reaches a file with a replaced STRING bound on a ``compared`` column
    (lower-case names a condition of the query names), ``None`` when there is none (manifests only).

    Every source reaches the planner through :func:`~mt_magic.catalog.tables.table_info`, which keeps the pyiceberg
    table it read: one without it was built by hand, and checking nothing would skip the rule silently."""
    if not compared:
        return None
    for source, change in zip(sources, changes, strict=True):
        if change.consumed == change.pinned:
            continue
        assert source.iceberg is not None, (
            f"{source.name} reached the planner without its pyiceberg table: its STRING bounds cannot be checked "
            "(build it with catalog.tables.table_info)"
        )
        fields = _text_fields(source.iceberg, compared)
        after = source.snapshots_after(change.consumed) or ()
        column = _replaced_in(source.iceberg, after, fields) if fields else None
        if column is not None:
            return f"{source.name}.{column}"
    return None


def _text_fields(table: Any, compared: Collection[str]) -> dict[int, str]:
    """Field id → column name of every STRING field (nested ones included) under a top-level column whose name a
    condition names, in any of the table's schemas."""
    return {
        field_id: top.name
        for schema in table.schemas().values()
        for top in schema.fields
        if top.name.lower() in compared
        for field_id in _text_ids(top)
    }


def _text_ids(field: Any) -> Iterator[int]:
    """The ids of ``field`` and the fields inside it (struct fields, list elements, map keys and values) that are
    STRING."""
    from pyiceberg.types import ListType, MapType, StringType, StructType

    kind = field.field_type
    if isinstance(kind, StringType):
        yield field.field_id
    elif isinstance(kind, StructType):
        for inner in kind.fields:
            yield from _text_ids(inner)
    elif isinstance(kind, ListType):
        yield from _text_ids(kind.element_field)
    elif isinstance(kind, MapType):
        yield from _text_ids(kind.key_field)
        yield from _text_ids(kind.value_field)


def _replaced_in(table: Any, snapshots: Sequence[SnapshotInfo], fields: dict[int, str]) -> str | None:
    """The column of the first replaced bound in a data file one of ``snapshots`` added or removed, or that was live
    when one of them added delete files (which file a delete names is not read here: every live one counts)."""
    seen: set[str] = set()
    for info in snapshots:
        deletes = any(info.count(key) for key in DELETE_FILE_KEYS)
        if not deletes and not any(info.count(key) for key in FILE_COUNTS):
            continue
        for entry in _data_entries(table, info.snapshot_id, every_live=deletes, seen=seen):
            bounds = (entry.data_file.lower_bounds or {}, entry.data_file.upper_bounds or {})
            for field_id, column in fields.items():
                if any(REPLACED in side.get(field_id, b"") for side in bounds):
                    return column
    return None


def _data_entries(table: Any, snapshot_id: int, *, every_live: bool, seen: set[str]) -> Iterator[Any]:
    """The data-file entries snapshot ``snapshot_id`` added or removed (``every_live``: also those live in it), each
    manifest it did not write read once across calls sharing ``seen``."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    snapshot = table.snapshot_by_id(snapshot_id)
    for manifest in snapshot.manifests(table.io) if snapshot is not None else ():
        ours = manifest.added_snapshot_id == snapshot_id
        if manifest.content != ManifestContent.DATA or not (ours or every_live) or manifest.manifest_path in seen:
            continue
        if not ours:
            seen.add(manifest.manifest_path)
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            changed = ours and entry.status != ManifestEntryStatus.EXISTING
            if changed or (every_live and entry.status != ManifestEntryStatus.DELETED):
                yield entry
