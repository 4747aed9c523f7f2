"""Rows of Iceberg tables as Arrow, read and committed through pyiceberg, for refreshes that run in process.

Reads go through pyiceberg's own scan (field ids, schema evolution, projection); writes through its snapshot
producers, so a commit is one Iceberg snapshot like Spark's: an append, or an overwrite that removes the data
files the refresh read and adds the new ones. pyiceberg asserts, in the same catalog commit, that the table's
``main`` branch is still at the snapshot the table was loaded at, so a concurrent writer makes the commit fail
with :class:`~pyiceberg.exceptions.CommitFailedException` and nothing lands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.schema import Schema
    from pyiceberg.table import FileScanTask, Table
    from pyiceberg.table.update.snapshot import UpdateSnapshot, _OverwriteFiles


COMMIT_NUM_RETRIES = "commit.retry.num-retries"
"""The table property pyiceberg (0.12 and later) reads for how often to retry a commit that lost a race."""


class NotReadableInProcess(Exception):
    """The rows cannot be read here exactly (delete files, a non-append snapshot, files not in Parquet): read them
    with Spark."""


def _parquet(data_file: DataFile) -> DataFile:
    from pyiceberg.manifest import FileFormat

    if data_file.file_format != FileFormat.PARQUET:
        raise NotReadableInProcess(f"{data_file.file_path} is a {data_file.file_format.name} file")
    return data_file


def _projection(table: Table, columns: Sequence[str] | None) -> Schema:
    schema = table.schema()
    return schema if columns is None else schema.select(*columns, case_sensitive=False)


def streamed_rows(
    table: Table, snapshot: int, columns: Sequence[str] | None = None, skipped: Iterable[str] = ()
) -> Iterator[pa.RecordBatch]:
    """Every live row of the table at ``snapshot`` (its deletes applied), ``columns`` only, as record batches read
    one at a time: a caller that aggregates each holds its groups, not the rows. Data files whose paths are in
    ``skipped`` are left out (the caller has read them).

    Raises:
        NotReadableInProcess: a file is not Parquet.
    """
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    left_out = set(skipped)
    planned = [
        task
        for task in table.scan(snapshot_id=snapshot, case_sensitive=False).plan_files()
        if task.file.file_path not in left_out
    ]
    for task in planned:
        _parquet(task.file)
    projected = _projection(table, columns)
    return ArrowScan(table.metadata, table.io, projected, AlwaysTrue()).to_record_batches(planned)


def appended_rows(table: Table, after: int | None, upto: int, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows the snapshots after ``after`` (exclusive) up to ``upto`` (inclusive) appended.

    Compactions (``replace``) in the range add no rows and are skipped; ``after=None`` reads all of ``upto``.

    Raises:
        NotReadableInProcess: the range holds a snapshot that is not an append or a compaction, or
            ``after`` is not an ancestor of ``upto``.
    """
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus
    from pyiceberg.table import FileScanTask

    if after is None:
        scan = table.scan(snapshot_id=upto, selected_fields=tuple(columns or ("*",)), case_sensitive=False)
        planned = list(scan.plan_files())
        for task in planned:
            _parquet(task.file)
        return ArrowScan(table.metadata, table.io, _projection(table, columns), AlwaysTrue()).to_table(planned)
    by_id = {s.snapshot_id: s for s in table.metadata.snapshots}
    tasks: list[FileScanTask] = []
    current: int | None = upto
    while current != after:
        snapshot = by_id.get(current) if current is not None else None
        if snapshot is None:
            raise NotReadableInProcess(f"snapshot {after} is not an ancestor of {upto}")
        operation = snapshot.summary.operation.value if snapshot.summary is not None else "append"
        if operation == "append":
            for manifest in snapshot.manifests(table.io):
                if manifest.content != ManifestContent.DATA or manifest.added_snapshot_id != snapshot.snapshot_id:
                    continue
                for entry in manifest.fetch_manifest_entry(table.io):
                    if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == snapshot.snapshot_id:
                        tasks.append(FileScanTask(_parquet(entry.data_file)))
        elif operation != "replace":
            raise NotReadableInProcess(f"snapshot {snapshot.snapshot_id} is a {operation}, not an append")
        current = snapshot.parent_snapshot_id
    projected = _projection(table, columns)
    return ArrowScan(table.metadata, table.io, projected, AlwaysTrue()).to_table(tasks)


def task_rows(table: Table, tasks: Sequence[FileScanTask], columns: Sequence[str] | None = None) -> pa.Table:
    """The live rows of planned scan tasks (each a data file with the delete files that applied at its snapshot:
    pyiceberg applies position deletes and deletion vectors), ``columns`` only.

    Raises:
        NotReadableInProcess: a file is not Parquet.
    """
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    for task in tasks:
        _parquet(task.file)
    return ArrowScan(table.metadata, table.io, _projection(table, columns), AlwaysTrue()).to_table(list(tasks))


def rows_at_positions(
    table: Table,
    data_file: DataFile,
    positions: Sequence[int],
    columns: Sequence[str] | None = None,
    live: tuple[Sequence[int] | np.ndarray, Callable[[pa.RecordBatch], None]] | None = None,
) -> pa.Table:
    """The rows at ``positions`` (0-based, ascending) of one data file, whatever deletes apply to them since: the
    file is streamed in record batches (pyiceberg's projection: field ids, renames, promotions) and only those rows
    kept, so memory holds one batch and the rows taken.

    ``live`` = (the positions deleted at some snapshot, a consumer): each batch's rows not among them are handed
    to the consumer on the way, so a caller that also needs the file's live rows there reads it once.

    Raises:
        NotReadableInProcess: the file is not Parquet, or a position lies past its rows.
    """
    import numpy as np
    import pyarrow as pa
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.table import FileScanTask

    _parquet(data_file)
    wanted = np.asarray(positions, dtype=np.int64)
    taken, start = [], 0
    scan = ArrowScan(table.metadata, table.io, _projection(table, columns), AlwaysTrue())
    dead = np.asarray(live[0] if live else (), dtype=np.int64)
    for batch in scan.to_record_batches([FileScanTask(data_file)]):  # no delete files: every row, in file order
        low, high = np.searchsorted(wanted, [start, start + batch.num_rows])
        if high > low:
            taken.append(batch.take(pa.array(wanted[low:high] - start)))
        if live is not None:
            low, high = np.searchsorted(dead, [start, start + batch.num_rows])
            keep = np.ones(batch.num_rows, dtype=bool)
            keep[dead[low:high] - start] = False
            live[1](batch.filter(pa.array(keep)))
        start += batch.num_rows
    if wanted.size and wanted[-1] >= start:
        raise NotReadableInProcess(f"a deleted position lies past the {start:,} rows of {data_file.file_path}")
    empty = task_rows(table, [], columns)  # the schema every other read of the change has
    return pa.Table.from_batches(taken).cast(empty.schema) if taken else empty


def rows_at(
    table: Table, snapshot_id: int | None, files: BooleanExpression | None = None, max_rows: int | None = None
) -> tuple[pa.Table, list[DataFile]]:
    """Every row of the data files of the table at ``snapshot_id`` (those ``files`` selects: scan planning
    prunes by partition values and column bounds, and each selected file is read whole), and those files (what
    an overwrite replaces).

    Raises:
        NotReadableInProcess: the files have delete files (an overwrite could not remove them cleanly), or
            hold more than ``max_rows`` rows.
    """
    from pyiceberg.expressions import AlwaysTrue

    if snapshot_id is None:
        return table.schema().as_arrow().empty_table(), []
    scan = table.scan(snapshot_id=snapshot_id, row_filter=files if files is not None else AlwaysTrue())
    tasks = list(scan.plan_files())
    if any(task.delete_files for task in tasks):
        raise NotReadableInProcess(f"{table.name()} has delete files at snapshot {snapshot_id}")
    for task in tasks:
        _parquet(task.file)
    held = sum(task.file.record_count for task in tasks)
    if max_rows is not None and held > max_rows:
        raise NotReadableInProcess(f"the files to rewrite hold {held:,} rows, more than {max_rows:,}")
    from pyiceberg.io.pyarrow import ArrowScan

    rows = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue()).to_table(tasks)
    return rows, [task.file for task in tasks]


def write_files(table: Table, rows: pa.Table) -> list[DataFile]:
    """``rows`` written as data files of ``table`` (its partition spec, pyiceberg's writer: file names, metrics),
    not yet part of any snapshot: a failure here (a value the table's types cannot hold) leaves the table as it was.
    """
    import uuid

    from pyiceberg.io.pyarrow import _dataframe_to_data_files  # pyiceberg's own writer (file names, metrics)

    if not rows.num_rows:
        return []
    return list(_dataframe_to_data_files(table_metadata=table.metadata, df=rows, io=table.io, write_uuid=uuid.uuid4()))


def commit_files(
    table: Table, added: Iterable[DataFile], replaced: Iterable[DataFile] | None, properties: Mapping[str, str]
) -> None:
    """One snapshot: the ``added`` files (:func:`write_files`) appended (``replaced=None``), or the ``replaced``
    files swapped for them.

    ``properties`` go into the snapshot summary. The commit asserts ``main`` is still where ``table`` was
    loaded (pyiceberg adds the requirement), so it fails on a concurrent commit.

    Raises:
        pyiceberg.exceptions.CommitFailedException: another writer committed first; nothing was written.
    """
    once = without_retries(table)
    with once.transaction() as transaction:
        update = transaction.update_snapshot(snapshot_properties=dict(properties))
        producer = update.fast_append() if replaced is None else _overwrite(update)
        with producer as files:
            for data_file in replaced or ():
                files.delete_data_file(data_file)
            for data_file in added:
                files.append_data_file(data_file)
    table.metadata, table.metadata_location = once.metadata, once.metadata_location  # the committed metadata


def without_retries(table: Table) -> Table:
    """``table`` as loaded, told to commit once: pyiceberg 0.12 retries a commit that lost a race on the refreshed
    table (up to ``commit.retry.num-retries`` times, default 4), which would land a refresh's rows on a state it
    never read. The retry count is set on this copy of the loaded metadata only; nothing of it is committed."""
    import copy

    once = copy.copy(table)
    once.metadata = table.metadata.model_copy(
        update={"properties": {**table.metadata.properties, COMMIT_NUM_RETRIES: "0"}}
    )
    return once


def _overwrite(update: UpdateSnapshot) -> _OverwriteFiles:
    """pyiceberg's overwrite producer, with each DELETED manifest entry stamped with the snapshot that deletes it.

    The spec's ``snapshot_id`` of a status-2 entry is "the snapshot id where the file was deleted"; pyiceberg
    0.10 and 0.11 (apache/iceberg-python#3236, fixed in 0.12) copy the id of the snapshot that *added* the file.
    Iceberg's incremental changelog scan keeps only the entries whose ``snapshot_id`` is in the scanned range, so
    with that stamp an in-process overwrite reads back, through ``create_changelog_view``, as its inserts alone:
    every table reading this one collected the new rows and never lost the old ones. On pyiceberg 0.12 and later
    the producer is used as it is.
    """
    producer = update.overwrite()
    if not _stamps_the_deleting_snapshot():
        producer.__class__ = _stamped_overwrite()  # the same producer, one method corrected
    return producer


@functools.cache
def _stamps_the_deleting_snapshot() -> bool:
    """Whether the installed pyiceberg writes a DELETED entry's ``snapshot_id`` as the spec says (0.12 and later)."""
    from importlib.metadata import version

    major, minor = (int(part) for part in version("pyiceberg").split(".")[:2])
    return (major, minor) >= (0, 12)


@functools.cache
def _stamped_overwrite() -> type[_OverwriteFiles]:
    from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus
    from pyiceberg.table.update.snapshot import _OverwriteFiles

    class StampedOverwrite(_OverwriteFiles):
        def _deleted_entries(self) -> list[ManifestEntry]:
            return [
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.DELETED,
                    snapshot_id=self._snapshot_id,
                    sequence_number=entry.sequence_number,
                    file_sequence_number=entry.file_sequence_number,
                    data_file=entry.data_file,
                )
                for entry in super()._deleted_entries()
            ]

    return StampedOverwrite
