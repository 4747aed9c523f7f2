"""The newest rows of a materialized table, read with Spark for the card's preview (no pandas).

The widgets never run Spark: they call :func:`preview` from their updater thread after a refresh
committed, and render the immutable :class:`Preview` it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.runtime.spark.quoting import identifier
from mt_magic.runtime.spark.shown_rows import rendered
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.vocabulary import is_hidden_column

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace


@dataclass(frozen=True)
class Preview:
    """Up to ``limit`` rows of one snapshot of a table, as plain Python values (dates and timestamps as Spark's
    text: :mod:`.shown_rows`)."""

    table: str
    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    snapshot_id: int | None
    """The snapshot the rows were read from; ``None`` while the table has never been refreshed."""
    limit: int
    ordered_by: tuple[str, ...] = ()
    """Columns sorted descending to put the newest rows first (the partition columns), if any."""


def preview(workspace: Workspace, name: str, limit: int) -> Preview:
    """Read the newest ``limit`` rows of ``name`` at its current snapshot.

    "Newest" means the latest partitions first for a partitioned table (its partition columns sorted
    descending); an unpartitioned table has no order of arrival, so any ``limit`` rows of the snapshot.

    Raises:
        NoSuchMaterializedTableError: ``name`` is not a materialized table.
        ValueError: ``limit`` is below 1.
    """
    if limit < 1:
        raise ValueError(f"preview limit must be at least 1, got {limit}")
    info, definition = workspace.catalog.load_materialized(name)
    columns = tuple(column for column, _, _ in info.columns if not is_hidden_column(column))
    if info.current_snapshot_id is None:
        return Preview(name, columns, (), None, limit)
    frame = table_at(workspace.spark, name, info.current_snapshot_id).select(*[identifier(c) for c in columns])
    ordered_by = tuple(c for c in definition.partitioned_by if c in columns)
    if ordered_by:
        frame = frame.orderBy(*[frame[c].desc() for c in ordered_by])
    rows = tuple(tuple(row) for row in rendered(frame.limit(limit)).collect())
    return Preview(name, tuple(frame.columns), rows, info.current_snapshot_id, limit, ordered_by)
