"""Which rows a merge-on-read range removed and added, from metadata and delete files alone (no Spark job).

A data file is immutable, so a range changes a table in three ways only: data files leave (every row they held
at the consumed snapshot is removed), data files come (every row they hold at the pinned snapshot is added), and
position deletes or deletion vectors are added against files that stay (the positions they newly delete are
removed rows). pyiceberg plans both ends (each data file with the delete files that apply to it, by partition and
sequence number) and reads those delete files — Parquet position deletes and Puffin deletion vectors alike — so
the change is known as file paths and row positions, at the cost of the delete files the range wrote, before any
data file is opened. :mod:`.merge_on_read` then reads just those rows' values with Spark.

A range with an equality delete (it names values, not positions; pyiceberg 0.10 refuses to plan a snapshot holding
one) is not planned here: :func:`plan_positions` answers ``None`` and the rows of the touched files are compared
at both ends instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MAX_POSITIONS = 200_000
"""Most removed positions read this way: each is a literal of the scan's filter (past it, whole files compared)."""


@dataclass(frozen=True)
class PositionChange:
    """A range's change as files and positions."""

    removed_files: frozenset[str]
    """Data files at the consumed snapshot that are gone at the pinned one: all their rows were removed."""
    added_files: frozenset[str]
    """Data files at the pinned snapshot that were not there before: all their (live) rows were added."""
    removed_positions: Mapping[str, tuple[int, ...]]
    """For data files at both ends: the positions deleted at the pinned snapshot and not at the consumed one."""
    deleted_at_pinned: Mapping[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    """For the files of :attr:`removed_positions`: every position deleted at the pinned snapshot (the rest of the
    file is its live rows there)."""
    consumed_tasks: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """pyiceberg's scan task of each data file live at the consumed snapshot (the file and the deletes then)."""
    pinned_tasks: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The same at the pinned snapshot: what the in-process reader (:mod:`.in_process.change_rows`) reads."""

    @property
    def positions(self) -> int:
        return sum(len(p) for p in self.removed_positions.values())

    @property
    def empty(self) -> bool:
        return not (self.removed_files or self.added_files or self.removed_positions)


def _planned(table: Any, snapshot: int) -> dict[str, Any]:
    """Every live data file at ``snapshot`` → its scan task (the file and the delete files that apply to it)."""
    return {task.file.file_path: task for task in table.scan(snapshot_id=snapshot).plan_files()}


def _key(delete: Any) -> tuple[str, int | None]:
    return delete.file_path, getattr(delete, "content_offset", None)


class _DeleteReader:
    """Reads each delete file once: data file path → deleted positions."""

    def __init__(self, io: Any) -> None:
        self._io = io
        self._read: dict[str, dict[str, Any]] = {}

    def positions(self, data_file: str, deletes: Iterable[Any]) -> np.ndarray:
        import numpy as np
        from pyiceberg.io.pyarrow import _read_deletes

        found = []
        for delete in deletes:
            if delete.file_path not in self._read:
                self._read[delete.file_path] = _read_deletes(self._io, delete)
            column = self._read[delete.file_path].get(data_file)
            if column is not None:
                found.append(column.to_numpy())
        return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)


def plan_positions(table: Any, consumed: int, pinned: int) -> PositionChange | None:
    """The change between two snapshots of ``table`` (a pyiceberg ``Table``) as files and positions, or ``None``
    when an equality delete changed or more than :data:`MAX_POSITIONS` positions were removed."""
    import numpy as np
    from pyiceberg.manifest import DataFileContent

    try:
        before, after = _planned(table, consumed), _planned(table, pinned)
    except ValueError:  # pyiceberg refuses to plan a snapshot holding an equality delete
        return None
    reader = _DeleteReader(table.io)
    removed: dict[str, tuple[int, ...]] = {}
    dead: dict[str, np.ndarray] = {}
    for path in before.keys() & after.keys():
        was = {_key(d): d for d in before[path].delete_files}
        now = {_key(d): d for d in after[path].delete_files}
        if was.keys() == now.keys():
            continue
        changed = [now[k] for k in now.keys() - was.keys()] + [was[k] for k in was.keys() - now.keys()]
        if any(d.content == DataFileContent.EQUALITY_DELETES for d in changed):
            return None
        deleted = reader.positions(path, now.values())
        new = np.setdiff1d(deleted, reader.positions(path, was.values()))
        if len(new):
            removed[path] = tuple(int(p) for p in new)
            dead[path] = deleted
    change = PositionChange(
        frozenset(before.keys() - after.keys()), frozenset(after.keys() - before.keys()), removed, dead, before, after
    )
    return change if change.positions <= MAX_POSITIONS else None
