"""What happened to one source between the snapshot the last refresh consumed and the one pinned now.

Read from snapshot metadata only (operations and summaries through pyiceberg), never from data: the
classification decides which delta reader is correct before any Spark job runs. Iceberg's incremental
append scan silently skips overwrite and delete snapshots, so it may only be used when every logical change
in the range is an append; row-level changes need the changelog, which cannot read delete files, so a range
with delete files at either end is marked ``merge_on_read`` and read from the data files it touches. A snapshot
that adds and removes no rows (an empty append: an upstream table's refresh recording its state) is no change, as a
compaction is not (:attr:`~mt_magic.catalog.tables.SnapshotInfo.changes_rows`, where staleness reads
:attr:`~mt_magic.catalog.tables.SnapshotInfo.changes_data`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from mt_magic.catalog.definitions import SourceState
from mt_magic.catalog.tables import TableInfo
from mt_magic.runtime.refresh.change_size import rows_found_by_position, source_change
from mt_magic.runtime.refresh.incremental.reasons import FallbackReason

DELETE_FILE_KEYS = ("added-delete-files", "added-position-delete-files", "added-equality-delete-files", "added-dvs")
"""Summary keys that count delete files (or deletion vectors) a snapshot added: merge-on-read writes."""


class ChangeKind(enum.Enum):
    """How a source changed since the consumed snapshot."""

    NONE = "none"
    """Same snapshot, or only compactions since."""
    APPENDS = "appends"
    """Only appended rows (or the source was empty before: everything is new)."""
    ROW_LEVEL = "row-level"
    """Deletes, updates or merges (possibly with appends): copy-on-write ones read through the changelog,
    merge-on-read ones (delete files) from the data files they touch (:mod:`.merge_on_read`)."""
    RULES_OUT = "rules out"
    """The change cannot be known or read; ``reason`` says why."""


SCANNED_WEIGHT = 0.25
"""What a row scanned in process to take removed positions costs, against a row a recompute reads: the scan
streams the touched files' needed columns and keeps only the removed rows (at 10 M rows, a spread MERGE or UPDATE
refreshed in process in 0.2–0.4 of a recompute's time: ``bench_changes.py``). ADAPTIVE's fraction rule counts
those rows at this weight until the table's own records decide."""


@dataclass(frozen=True)
class SourceChange:
    """One source's change between ``consumed`` (exclusive) and ``pinned`` (inclusive)."""

    name: str
    kind: ChangeKind
    consumed: int | None
    """``None``: the source was empty at the last refresh, so the whole pinned table is the delta."""
    pinned: int | None
    reason: FallbackReason | None = None
    changes: int = 0
    """Snapshots with a logical change in the range."""
    rows: int = 0
    """Rows those snapshots added plus rows they removed, from the summaries: the size of the delta."""
    read: int = 0
    """Rows reading the change costs (:func:`.change_size.rows_read`: the files it touched, whole); at least
    :attr:`rows`."""
    by_position: int = 0
    """Of :attr:`read`, the rows scanned to find removed positions in files that stayed
    (:func:`.change_size.rows_found_by_position`): streamed, not held."""
    merge_on_read: bool = False
    """Delete files were added, or are present at either end: Iceberg's changelog scan refuses the range."""
    iceberg: Any = field(default=None, compare=False, hash=False, repr=False)
    """The source's pyiceberg ``Table`` it was classified from (``None``: none was loaded): the merge-on-read reader
    plans both ends' files and reads their delete files through it (:mod:`.delete_positions`)."""

    @property
    def reads(self) -> int:
        """Rows reading the change costs: :attr:`read` where classified, else (a plan built by hand) :attr:`rows`."""
        return max(self.read, self.rows)

    @property
    def held(self) -> int:
        """Rows reading the change holds in memory at once: :attr:`reads` but those found by position."""
        return self.reads - min(self.by_position, self.read)

    @property
    def in_process_reads(self) -> float:
        """:attr:`reads` as an in-process refresh spends them: the scanned rows at :data:`SCANNED_WEIGHT`."""
        return self.held + (self.reads - self.held) * SCANNED_WEIGHT

    @property
    def changed(self) -> bool:
        return self.kind in (ChangeKind.APPENDS, ChangeKind.ROW_LEVEL)

    def describe(self) -> str:
        if self.kind is ChangeKind.RULES_OUT:
            return f"{self.name}: {self.reason.sentence if self.reason else 'unknown change'}"
        return f"{self.name}: {self.kind.value} ({self.changes} snapshot(s))"


def _ruled_out(name: str, recorded: int | None, pinned: int | None, reason: FallbackReason) -> SourceChange:
    return SourceChange(name, ChangeKind.RULES_OUT, recorded, pinned, reason)


def classify(info: TableInfo, recorded: SourceState | None) -> SourceChange:
    """Classify a source's change from its metadata, loaded once when the refresh pinned it.

    Args:
        info: the source's metadata; its current snapshot is the pinned one.
        recorded: the source as the last refresh state recorded it (``None``: not recorded).
    """
    name, pinned = info.name, info.current_snapshot_id
    if recorded is None:
        return _ruled_out(name, None, pinned, FallbackReason.SOURCE_NOT_RECORDED)
    consumed = recorded.snapshot_id
    if recorded.uuid and recorded.uuid != info.uuid:
        return _ruled_out(name, consumed, pinned, FallbackReason.SOURCE_RECREATED)
    if consumed == pinned:
        return SourceChange(name, ChangeKind.NONE, consumed, pinned)
    after = info.snapshots_after(consumed)
    if after is None or pinned is None:
        expired = consumed not in info.known_snapshot_ids
        reason = FallbackReason.SNAPSHOT_EXPIRED if expired else FallbackReason.HISTORY_REWRITTEN
        return _ruled_out(name, consumed, pinned, reason)
    logical = [s for s in after if s.changes_rows]
    counted = source_change(name, logical, after[-1] if after else None)
    rows, read = counted.rows_added + counted.rows_removed, counted.read
    if consumed is None:
        return SourceChange(name, ChangeKind.APPENDS, None, pinned, changes=len(logical), rows=rows, read=read)
    before = next(s for s in info.snapshots if s.snapshot_id == consumed)
    if None not in (before.schema_id, after[-1].schema_id) and before.schema_id != after[-1].schema_id:
        return _ruled_out(name, consumed, pinned, FallbackReason.SCHEMA_CHANGED)
    if not logical:
        return SourceChange(name, ChangeKind.NONE, consumed, pinned)
    merge_on_read = any(s.count(key) for s in logical for key in DELETE_FILE_KEYS)
    if not merge_on_read and all(s.operation == "append" for s in logical):
        return SourceChange(name, ChangeKind.APPENDS, consumed, pinned, changes=len(logical), rows=rows, read=read)
    merge_on_read |= before.count("total-delete-files") > 0 or after[-1].count("total-delete-files") > 0
    return SourceChange(
        name,
        ChangeKind.ROW_LEVEL,
        consumed,
        pinned,
        changes=len(logical),
        rows=rows,
        read=read,
        by_position=rows_found_by_position(logical, after[-1]),
        merge_on_read=merge_on_read,
        iceberg=info.iceberg,
    )
