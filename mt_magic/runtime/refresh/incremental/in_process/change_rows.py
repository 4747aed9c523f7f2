"""A source's row-level change as two Arrow tables, the rows it removed and the rows it added — read in process, at
the cost of the files the change touched.

:func:`~..delete_positions.plan_positions` plans both ends from metadata and the delete files (copy-on-write and
merge-on-read alike): data files that left are read as they were at the consumed snapshot, data files that came as
they are at the pinned one, and the newly deleted positions of files that stayed are taken from those files. A
copy-on-write rewrite carries its unchanged rows into the new file, so both sides hold them: :func:`net` cancels a
row removed and added again where the columns' values compare as Spark compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mt_magic.runtime.refresh.incremental.changes import SourceChange
from mt_magic.runtime.refresh.incremental.delete_positions import plan_positions
from mt_magic.runtime.refresh.incremental.in_process.guards import DataNotExact, check_readable

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class ChangedRows:
    """The rows a range removed and the rows it added, in the query's columns."""

    removed: pa.Table
    added: pa.Table
    read: int
    """Rows read from data files whole and held to know them (files that left or came); the files that stayed are
    only scanned for their removed positions."""
    seen: frozenset[str] = frozenset()
    """Data files whose live rows at the pinned snapshot were handed to :func:`changed_rows`' ``live`` consumer."""


def changed_rows(
    change: SourceChange,
    columns: Sequence[str] | None,
    max_rows: int,
    max_scanned: int,
    live: Callable[[pa.RecordBatch], None] | None = None,
) -> ChangedRows:
    """The change of one source between its consumed and pinned snapshots, read through its pyiceberg table.

    ``live``, if given, is handed every live row at the pinned snapshot of the files read (those that stayed, as
    they stream by; those that came), batch by batch, so a caller that needs the source's rows there need not read
    them again (:attr:`ChangedRows.seen`).

    Raises:
        DataNotExact: the change cannot be read here (no table at hand, an equality delete, more than ``max_rows``
            rows in the files that left or came, more than ``max_scanned`` in the files whose positions were
            deleted, a file that is not Parquet, data the engines do not hold alike).
    """
    from mt_magic.catalog.rows import rows_at_positions, task_rows

    table: Any = change.iceberg
    if table is None or change.consumed is None or change.pinned is None:
        raise DataNotExact(f"the change of {change.name} is not at hand in process")
    planned = plan_positions(table, change.consumed, change.pinned)
    if planned is None:
        raise DataNotExact(f"the change of {change.name} holds equality deletes or too many deleted positions")
    gone = [planned.consumed_tasks[p] for p in sorted(planned.removed_files)]
    came = [planned.pinned_tasks[p] for p in sorted(planned.added_files)]
    kept = [planned.pinned_tasks[p].file for p in sorted(planned.removed_positions)]
    read = sum(t.file.record_count for t in (*gone, *came))
    scanned = sum(f.record_count for f in kept)
    if read > max_rows:
        raise DataNotExact(f"the files {change.name}'s change touched hold {read:,} rows, more than {max_rows:,}")
    if scanned > max_scanned:
        raise DataNotExact(f"{change.name}'s deleted positions lie in {scanned:,} rows, more than {max_scanned:,}")
    import pyarrow as pa

    removed = [task_rows(table, gone, columns)] if gone else []
    for f in kept:
        fed = (planned.deleted_at_pinned[f.file_path], live) if live is not None else None
        removed.append(rows_at_positions(table, f, planned.removed_positions[f.file_path], columns, fed))
    added = task_rows(table, came, columns) if came else None
    if live is not None and added is not None:
        for batch in added.to_batches():
            live(batch)
    empty = task_rows(table, [], columns)
    seen = frozenset(f.file_path for f in kept) | planned.added_files if live is not None else frozenset()
    found = ChangedRows(
        pa.concat_tables(removed) if removed else empty, added if added is not None else empty, read, seen
    )
    check_readable(found.removed, f"the rows {change.name}'s change removed")
    check_readable(found.added, f"the rows {change.name}'s change added")
    return found


def net(con: Any, rows: ChangedRows) -> ChangedRows:
    """``rows`` with each row both removed and added (a copy-on-write rewrite's unchanged rows) taken out of both
    sides, multiset-wise (``EXCEPT ALL``; NULLs match); as they were when a column's values may compare equal in
    DuckDB and not in Spark (floating point: NaN, -0.0), which only costs a larger delta."""
    if not rows.removed.num_rows or not rows.added.num_rows:
        return rows
    if not all(_netted(field.type) for field in rows.removed.schema):
        return rows
    con.register("__mt_removed", rows.removed)
    con.register("__mt_added", rows.added)
    try:
        removed = con.sql("SELECT * FROM __mt_removed EXCEPT ALL SELECT * FROM __mt_added").to_arrow_table()
        added = con.sql("SELECT * FROM __mt_added EXCEPT ALL SELECT * FROM __mt_removed").to_arrow_table()
    finally:
        con.unregister("__mt_removed")
        con.unregister("__mt_added")
    return ChangedRows(removed.cast(rows.removed.schema), added.cast(rows.added.schema), rows.read, rows.seen)


def _netted(arrow_type: pa.DataType) -> bool:
    """Whether DuckDB's equality of these values is Spark's (no NaN, no -0.0, no collation)."""
    import pyarrow.types as t

    checks = (t.is_integer, t.is_string, t.is_large_string, t.is_binary, t.is_date, t.is_timestamp, t.is_boolean)
    return any(check(arrow_type) for check in (*checks, t.is_decimal))
