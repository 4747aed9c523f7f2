"""Delta relations of the changed sources, as temp views of the refresh's child session, and delta terms.

* Appends: Iceberg's incremental append scan (``start-snapshot-id`` exclusive, ``end-snapshot-id``
  inclusive); a source that was empty at the last refresh contributes its whole pinned snapshot.
* Row-level changes: Iceberg's changelog scan netted by value inside Spark (:mod:`.changelog`: carry-over rows
  removed, changes collapsed across snapshots, every value as stored). A merge-on-read range (delete files,
  which the changelog refuses) reads the rows of the data files it touched at both snapshots instead
  (:mod:`.merge_on_read`): the same two views.

A delta term replaces one source by its delta and pins the others: sources before it at their new
snapshots, sources after it at their consumed ones, so the terms sum to exactly Q(new) − Q(old).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mt_magic.runtime.refresh.incremental.changelog import changelog_delta
from mt_magic.runtime.refresh.incremental.changes import ChangeKind, SourceChange
from mt_magic.runtime.refresh.incremental.merge_on_read import SIDE, merge_on_read_delta
from mt_magic.runtime.spark.quoting import identifier, qualified
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.sql.query.rewrite import pin_sources

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class DeltaViews:
    """Temp views of each changed source's inserted (and deleted) rows; :meth:`release` frees them."""

    session: SparkSession
    inserted: dict[str, str] = field(default_factory=dict)
    deleted: dict[str, str] = field(default_factory=dict)
    cached: list[DataFrame] = field(default_factory=list)
    empty: dict[str, str] = field(default_factory=dict)
    """Every source as an empty relation (registered for UNIONs: other branches' sources in a delta term)."""
    filtered: list[str] = field(default_factory=list)
    """Sources restricted to the affected join keys (:func:`.strategies.affected_groups`)."""

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()
        for view in (
            *self.inserted.values(),
            *self.deleted.values(),
            *self.empty.values(),
            *self.filtered,
        ):
            self.session.catalog.dropTempView(view)


def _append_delta(session: SparkSession, change: SourceChange) -> DataFrame:
    reader = session.read
    if change.consumed is None:
        assert change.pinned is not None, "an append change always has a pinned snapshot"
        return table_at(session, change.name, change.pinned)
    return (
        reader.option("start-snapshot-id", str(change.consumed))
        .option("end-snapshot-id", str(change.pinned))
        .table(qualified(change.name))
    )


def register_deltas(
    session: SparkSession, changes: Sequence[SourceChange], empty: bool = False, single_task: bool = False
) -> DeltaViews:
    """Register the delta views of every changed source (lazy: no Spark job runs here).

    Row-level deltas are cached: netting the changelog groups the changed files' rows, and
    several delta terms (and the affected-keys action) read the same delta. With ``empty``, every source is
    also registered as an empty relation (a UNION's delta terms read other branches' sources so). With
    ``single_task``, each delta is read as one partition, so the query's aggregation over it needs no shuffle.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    views = DeltaViews(session)
    tag = uuid.uuid4().hex[:12]
    for index, change in enumerate(changes):
        if not change.changed:
            continue
        inserted, deleted = f"__mt_ins_{index}_{tag}", f"__mt_del_{index}_{tag}"
        if change.kind is ChangeKind.APPENDS:
            appended = _append_delta(session, change)
            (appended.coalesce(1) if single_task else appended).createOrReplaceTempView(inserted)
            views.inserted[change.name] = inserted
            continue
        log = merge_on_read_delta(session, change) if change.merge_on_read else changelog_delta(session, change)
        data = [identifier(c) for c in log.columns if c != SIDE]
        log = (log.coalesce(1) if single_task else log).persist(StorageLevel.MEMORY_AND_DISK)
        views.cached.append(log)
        log.where(F.col(SIDE) == "+").select(*data).createOrReplaceTempView(inserted)
        log.where(F.col(SIDE) == "-").select(*data).createOrReplaceTempView(deleted)
        views.inserted[change.name] = inserted
        views.deleted[change.name] = deleted
    for index, change in enumerate(changes if empty else ()):
        view = f"__mt_none_{index}_{tag}"
        session.table(qualified(change.name)).where(F.lit(False)).createOrReplaceTempView(view)
        views.empty[change.name] = view
    return views


def delta_terms(
    query: str,
    changes: Sequence[SourceChange],
    deltas: dict[str, str],
    branches: Sequence[frozenset[str]] = (),
    empty: Mapping[str, str] | None = None,
) -> list[str]:
    """One query per changed source i: source i read from ``deltas[i]``, sources before i at their pinned
    snapshot, sources after i at their consumed one. A term with an empty side (a source that was or is
    empty) is left out: over inner joins it produces no rows.

    For a UNION (``branches``: each branch's sources) the sources outside i's branch read ``empty``: their
    branches' terms are other terms, and a branch with an empty source contributes no rows.
    """
    terms = []
    for i, change in enumerate(changes):
        if change.name not in deltas:
            continue
        branch = next((b for b in branches if change.name in b), None)
        snapshots: dict[str, int | None] = {}
        views = {change.name: deltas[change.name]}
        for j, other in enumerate(changes):
            if branch is not None and other.name not in branch and empty is not None:
                views[other.name] = empty[other.name]
            elif j != i:
                snapshots[other.name] = other.pinned if j < i else other.consumed
        if any(snapshot is None for snapshot in snapshots.values()):
            continue
        terms.append(pin_sources(query, snapshots, views))
    return terms
