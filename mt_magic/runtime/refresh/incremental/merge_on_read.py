"""The change of a merge-on-read source, read from the data files its snapshots touched.

Iceberg's changelog scan refuses delete files (position deletes, equality deletes, deletion vectors), so a
range whose snapshots add or drop them is read here instead, with Iceberg's own readers (which apply every
kind of delete) at both ends of the range:

* from the ``files`` metadata table at the consumed and the pinned snapshot: the data files that left, the
  data files that came, and the data files that stayed but whose deletes changed (a deletion vector names its
  data file, a position delete file's path bounds do when it touches one; otherwise, and for an equality
  delete file, every data file of its partition — or of the table, for an unpartitioned spec — may be touched);
* the rows of the touched files at each end, identified by ``(_file, _pos)``: a file is immutable, so a row
  is in both ends exactly when that position is. Deleted = rows at the consumed snapshot whose position is
  gone at the pinned one; inserted = rows at the pinned snapshot whose position was not there before.

A superset of touched files is still exact (an untouched file has the same positions at both ends); rows
a compaction moved to another file come out deleted and inserted again, which cancels in every strategy.
Positions make duplicates and values that compare equal (NULL, NaN, -0.0) no concern: nothing compares values.

Where the source's pyiceberg table is at hand and no equality delete changed, the positions come from the delete
files themselves (:mod:`.delete_positions`): one scan per end, each a filter on ``_file`` and ``_pos`` — no
metadata query, no join — rather than every row of the touched files at both ends joined on its position.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mt_magic.runtime.refresh.incremental.changes import SourceChange
from mt_magic.runtime.refresh.incremental.delete_positions import PositionChange, plan_positions
from mt_magic.runtime.spark.quoting import identifier, qualified, string_literal

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
"""The ``content`` codes of Iceberg's ``files`` metadata table."""
SIDE = "__mt_side"
"""The delta's column saying which side a row is on: ``'+'`` inserted, ``'-'`` deleted."""
FILE, POSITION = "_file", "_pos"
DELETE_FILE_PATH = 2147483546
"""The field id of a position delete file's ``file_path`` column: equal bounds name the one data file it
touches (what Iceberg's ``ContentFileUtil.referencedDataFile`` reads; a truncated bound never equals the other)."""


@dataclass(frozen=True)
class FileEntry:
    """One data or delete file as the ``files`` metadata table lists it at one snapshot."""

    content: int
    path: str
    spec_id: int
    partition: tuple[object, ...]
    referenced: str | None
    offset: int | None
    """A deletion vector's place in its Puffin file (several share one file)."""

    @property
    def key(self) -> tuple[str, int | None]:
        return self.path, self.offset


@dataclass(frozen=True)
class TouchedFiles:
    """The data files to read at each end of the range."""

    consumed: frozenset[str]
    pinned: frozenset[str]


def _entries(session: SparkSession, table: str, snapshot: int) -> list[FileEntry]:
    files = session.sql(f"SELECT * FROM {qualified(table)}.files VERSION AS OF {int(snapshot)}")
    partition = "partition" if "partition" in files.columns else "NULL"  # an unpartitioned table has none
    rows: list[Row] = files.selectExpr(
        "content",
        "file_path",
        "spec_id",
        f"{partition} AS partition",
        f"coalesce(referenced_data_file, CASE WHEN lower_bounds[{DELETE_FILE_PATH}] = upper_bounds[{DELETE_FILE_PATH}]"
        f" THEN CAST(lower_bounds[{DELETE_FILE_PATH}] AS STRING) END)",
        "content_offset",
    ).collect()
    return [FileEntry(r[0], r[1], r[2], tuple(r[3] or ()), r[4], r[5]) for r in rows]


def touched_files(consumed: Iterable[FileEntry], pinned: Iterable[FileEntry]) -> TouchedFiles:
    """Which data files to read at each end: those that left or came, and those whose deletes changed."""
    before, after = list(consumed), list(pinned)
    data_before = {e.path: e for e in before if e.content == DATA}
    data_after = {e.path: e for e in after if e.content == DATA}
    deletes_before = {e.key: e for e in before if e.content != DATA}
    deletes_after = {e.key: e for e in after if e.content != DATA}
    changed = [deletes_after[k] for k in deletes_after.keys() - deletes_before.keys()]
    changed += [deletes_before[k] for k in deletes_before.keys() - deletes_after.keys()]
    stayed = data_before.keys() & data_after.keys()
    touched: set[str] = set()
    for delete in changed:
        if delete.referenced is not None:
            touched.add(delete.referenced)
        elif all(value is None for value in delete.partition):  # unpartitioned: may apply to any data file
            touched |= stayed
        else:
            touched |= {
                path
                for path in stayed
                if (data_after[path].spec_id, data_after[path].partition) == (delete.spec_id, delete.partition)
            }
    kept = touched & stayed
    return TouchedFiles(
        frozenset(data_before.keys() - data_after.keys()) | kept,
        frozenset(data_after.keys() - data_before.keys()) | kept,
    )


def _rows(session: SparkSession, table: str, snapshot: int, files: frozenset[str], side: str) -> DataFrame:
    """The rows of ``files`` at ``snapshot`` (deletes applied by Iceberg), with their position and side."""
    from pyspark.sql import functions as F

    rows = _rows_at(session, table, snapshot)
    # a filter, not a DataFrame of the paths: PySpark's createDataFrame makes its session the process's active one,
    # so the refresh's child session would become what the user's SparkSession.getActiveSession() returns
    return rows.where(F.col(FILE).isin(sorted(files))).withColumn(SIDE, F.lit(side))


def _files_in(paths: Iterable[str]) -> str:
    return f"{FILE} IN ({', '.join(string_literal(p) for p in sorted(paths))})"


def _at_positions(positions: PositionChange) -> str:
    """The removed rows at the consumed snapshot, as a filter on ``_file`` and ``_pos`` (SQL text: one parse)."""
    parts = [_files_in(positions.removed_files)] if positions.removed_files else []
    for path, at in sorted(positions.removed_positions.items()):
        parts.append(f"({FILE} = {string_literal(path)} AND {POSITION} IN ({', '.join(map(str, at))}))")
    return " OR ".join(parts) or "false"


def position_delta(session: SparkSession, change: SourceChange, positions: PositionChange) -> DataFrame:
    """The change's rows from its files and positions: the removed ones read at the consumed snapshot, the rows of
    the added files at the pinned one (each end one scan and a filter)."""
    from pyspark.sql import functions as F

    assert change.consumed is not None and change.pinned is not None, "a row-level change has both snapshots"
    before = _rows_at(session, change.name, change.consumed).where(F.expr(_at_positions(positions)))
    after = _rows_at(session, change.name, change.pinned)
    after = after.where(F.expr(_files_in(positions.added_files)) if positions.added_files else F.lit(False))
    data = [identifier(c) for c in before.columns if c not in (FILE, POSITION)]
    deleted = before.select(*data, F.lit("-").alias(SIDE))
    return deleted.unionByName(after.select(*data, F.lit("+").alias(SIDE)))


def _rows_at(session: SparkSession, table: str, snapshot: int) -> DataFrame:
    return session.sql(f"SELECT *, {FILE}, {POSITION} FROM {qualified(table)} VERSION AS OF {int(snapshot)}")


def merge_on_read_delta(session: SparkSession, change: SourceChange) -> DataFrame:
    """The source's inserted (``SIDE`` = '+') and deleted ('-') rows between the change's two snapshots.

    Lazy but for the metadata reads (planned by pyiceberg, or two small ``files`` scans collected on the
    driver); the columns are the source's, plus ``SIDE``.
    """
    assert change.consumed is not None and change.pinned is not None, "a row-level change has both snapshots"
    if change.iceberg is not None:
        positions = plan_positions(change.iceberg, change.consumed, change.pinned)
        if positions is not None:
            return position_delta(session, change, positions)
    files = touched_files(
        _entries(session, change.name, change.consumed), _entries(session, change.name, change.pinned)
    )
    before = _rows(session, change.name, change.consumed, files.consumed, "-")
    after = _rows(session, change.name, change.pinned, files.pinned, "+")
    data = [identifier(c) for c in before.columns if c not in (FILE, POSITION, SIDE)]
    keys = [FILE, POSITION]
    deleted = before.join(after.select(*keys), keys, "left_anti")
    inserted = after.join(before.select(*keys), keys, "left_anti")
    return deleted.select(*data, SIDE).unionByName(inserted.select(*data, SIDE))
