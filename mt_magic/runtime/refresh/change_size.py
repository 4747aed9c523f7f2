"""How many rows reading a source's change costs, from snapshot summaries alone: what ADAPTIVE weighs and what
its records learn from, the planner (:mod:`.incremental.changes`) and the decision record
(:mod:`.decision_summary`) alike.

A change is read from the files it touched, whole (:mod:`.incremental.merge_on_read`,
:mod:`.incremental.in_process.change_rows`), not row by row:

* appended files: their rows;
* files a copy-on-write commit rewrote: the rows of the files it removed and of those it added (the summary's
  ``deleted-records`` and ``added-records``);
* position deletes and deletion vectors (merge-on-read, format v3): each names one data file, read whole at both
  ends — the summary counts the delete files, and the source's mean rows per data file sizes them;
* equality deletes: any data file may hold a deleted key, so the whole source.

So an ``UPDATE`` of 0.1 % of the rows spread over every data file reads the source whole, as a recompute does:
the two are priced alike, where counting changed rows alone made it look a thousand times cheaper. Of those rows,
the ones found by position (:func:`rows_found_by_position`) are scanned, only the changed ones kept: the in-process
reader streams them, so they bound its time, not its memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from mt_magic.catalog.tables import SnapshotInfo
from mt_magic.runtime.status import SourceDelta

TOUCHING_DELETE_FILES = ("added-position-delete-files", "added-dvs")
"""Summary keys counting delete files that each name (at most) one data file, with file-scoped deletes."""
REMOVED_ROWS = ("deleted-records", "added-position-deletes", "added-equality-deletes")
"""Summary keys counting rows a snapshot removed: rewritten away, or deleted by delete files (equality deletes:
the keys)."""


def source_change(name: str, logical: Sequence[SnapshotInfo], pinned: SnapshotInfo | None) -> SourceDelta:
    """One source's change over ``logical`` (the snapshots that changed data, oldest first; ``pinned`` the newest)
    as its summaries count it — rows and files added and removed, and the rows reading it costs: the one count the
    planner (:func:`.incremental.changes.classify`) and the decision record (:mod:`.decision_summary`) share."""
    return SourceDelta(
        name,
        sum(s.count("added-records") for s in logical),
        sum(s.count(key) for s in logical for key in REMOVED_ROWS),
        sum(s.count("added-data-files") for s in logical),
        sum(s.count("deleted-data-files") for s in logical),
        rows_read(logical, pinned),
    )


def rows_read(logical: Sequence[SnapshotInfo], pinned: SnapshotInfo | None) -> int:
    """Rows a reader of these snapshots' changes reads (``logical``: the snapshots that changed data, oldest
    first; ``pinned``: the newest, whose totals size a data file)."""
    total = pinned.count("total-records") if pinned is not None else 0
    read = rows_found_by_position(logical, pinned)
    for snapshot in logical:
        read += snapshot.count("added-records") + snapshot.count("deleted-records")
        if _equality(snapshot):
            read += total
    return read


def rows_found_by_position(logical: Sequence[SnapshotInfo], pinned: SnapshotInfo | None) -> int:
    """Of :func:`rows_read`, the rows of data files that stayed, read to find the positions position deletes and
    deletion vectors removed (each delete file names one data file, sized at the source's mean rows per file)."""
    total = pinned.count("total-records") if pinned is not None else 0
    files = pinned.count("total-data-files") if pinned is not None else 0
    per_file = total / files if files else 0.0
    found = 0
    for snapshot in (s for s in logical if not _equality(s)):
        touching = max(snapshot.count(key) for key in TOUCHING_DELETE_FILES)
        if touching == 0 and snapshot.count("added-position-deletes"):
            touching = 1
        found += min(total, round(touching * per_file))
    return found


def _equality(snapshot: SnapshotInfo) -> bool:
    return bool(snapshot.count("added-equality-delete-files") or snapshot.count("added-equality-deletes"))
