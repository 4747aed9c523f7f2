"""The one commit of every refresh: data and refresh state together, or nothing.

Every refresh — full, partition or incremental — ends in a single DataFrameWriterV2 call, ``append()`` or
``overwrite(condition)``, whose ``snapshot-property.*`` options carry the new refresh state, so the data and
the record of what it consumed land in the same Iceberg snapshot (exactly once: a crash before it repeats the
work, a crash after it finds the sources already consumed). An affected-slice refresh of an unpartitioned table
replaces its rows with one row-level ``MERGE`` instead of rewriting the table (:attr:`WriteMode.REPLACE_ROWS`),
the state in its snapshot through :mod:`mt_magic.runtime.spark.snapshot_properties`. A refresh run in process
(:mod:`.incremental.in_process`) commits its Arrow rows the same way through pyiceberg: one snapshot, the
state in its summary, :class:`RowsWrite`.

Concurrency: the table's current snapshot is checked right before the write (another writer committed since
the refresh read it → :class:`RefreshConflictError`, nothing written, the next attempt starts from the new
state); overwrites also ask Iceberg to validate, inside its own commit, that nothing matching the condition was
added since that snapshot (serializable isolation), which closes the window between the check and the commit.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from mt_magic.catalog.definitions import RefreshState
from mt_magic.catalog.tables import MaterializedCatalog, TableInfo, reaching, table_info
from mt_magic.catalog.views import MaterializedViews
from mt_magic.errors import RefreshConflictError, RefreshError
from mt_magic.runtime.refresh import audit, audit_write
from mt_magic.runtime.refresh.decision_summary import DECISION_KEY, decision_summary
from mt_magic.runtime.refresh.phases import phase
from mt_magic.runtime.spark.quoting import identifier, qualified
from mt_magic.runtime.status import Decision
from mt_magic.vocabulary import Expectation

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyspark.sql import Column, DataFrame, SparkSession

REFRESH_ID_KEY = "mt.refresh-id"
"""Snapshot-summary key tagging a refresh's commit, so its snapshot is found again after the write."""


class WriteMode(enum.Enum):
    """How the refresh's rows reach the table."""

    APPEND = "append"
    """Add the rows; nothing is removed."""
    OVERWRITE = "overwrite"
    """Replace the rows matching the condition (whole data files: partition conditions or everything)."""
    REPLACE_ROWS = "replace rows"
    """Delete the rows matching :attr:`Write.replaced`, add the write's rows: one row-level ``MERGE``, which
    rewrites only the data files holding those rows (copy-on-write) or writes delete files for them
    (``write.merge.mode`` = merge-on-read)."""


@dataclass(frozen=True)
class Write:
    """The rows a refresh produced and how they are committed."""

    df: DataFrame
    mode: WriteMode
    condition: Column | None = None
    """For OVERWRITE: the replaced region (``None``: the whole table)."""
    scope: str = ""
    """Human note on the region, e.g. "partitions ds=20241216"."""
    sum_mass: Mapping[str, float] = field(default_factory=dict)
    """What the refresh state records of the sums' mass (:attr:`RefreshState.sum_mass`)."""
    replaced: str = ""
    """For REPLACE_ROWS: the rows removed, a Spark SQL predicate over the table's columns qualified by
    :data:`TARGET`."""
    kept: str | None = None
    """The ``DROP ROW`` filter :attr:`df` was computed without (:func:`.audit.kept`): the commit counts the rows
    it drops and writes the others (``None``: every row is written)."""


TARGET = "__mt_target"
"""The table's alias in a REPLACE_ROWS write's ``MERGE``."""


@dataclass(frozen=True)
class RowsWrite:
    """Rows computed in process and already written as data files, committed through pyiceberg
    (:func:`mt_magic.catalog.rows.commit_files`): only the catalog commit is left, so nothing the in-process
    path does can fail after the point where its refresh could still run on Spark."""

    table: Table
    """The table as loaded when the refresh read it: the commit asserts it is still at that snapshot."""
    added: tuple[DataFile, ...]
    """The data files holding the rows (written, in no snapshot yet)."""
    rows: int
    replaced: tuple[DataFile, ...] | None
    """``None``: append ``added``; else the data files ``added`` replace (all of the table's, as read)."""
    scope: str = ""
    sum_mass: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Committed:
    """The snapshot a refresh committed."""

    snapshot_id: int | None
    rows_written: int
    committed_at: datetime | None
    table: TableInfo | None = None
    """The table as the commit left it (its read back): what follows the commit reads it here, not again."""


def commit(
    catalog: MaterializedCatalog,
    table: str,
    write: Write | RowsWrite,
    state: RefreshState,
    refresh_id: str,
    read_snapshot: int | None,
    decision: Decision | None = None,
) -> Committed:
    """Commit ``write`` with ``state`` in its snapshot summary; the table must still be at ``read_snapshot``.

    Args:
        read_snapshot: the table's snapshot when the refresh read it (``None``: it had none yet).
        decision: the refresh's decision record, written beside the state (:mod:`.decision_summary`).

    A table with expectations (its definition as read here, so every writer's path is audited) is written, audited
    and published (:mod:`.audit`).

    Raises:
        RefreshConflictError: the table changed since ``read_snapshot`` (another writer); nothing was committed.
        ExpectationsHeldError: a ``FAIL UPDATE`` expectation failed; the rows are staged, ``main`` not moved.
    """
    with phase("check"):
        info = catalog.load(table)
    current = info.current_snapshot_id
    if current != read_snapshot:
        raise RefreshConflictError(
            f"{table} changed during the refresh (snapshot {read_snapshot} → {current}, another writer?); "
            "nothing was committed, the next refresh starts from the new state."
        )
    with phase("view"):
        views = MaterializedViews(catalog)
        view = views.of_table(table, info.uuid)
        if view is not None:  # the spec's view-version-id, and a view entry per upstream materialized table
            version = view.version_for(state.definition_version)
            state = replace(state, view_version_id=version, view_states=views.upstream_views(state))
    if write.sum_mass:
        state = replace(state, sum_mass=dict(write.sum_mass))
    expectations = info.definition.expectations if info.definition is not None else ()
    properties = {**state.to_summary(), **(decision_summary(decision) if decision else {}), REFRESH_ID_KEY: refresh_id}
    if isinstance(write, RowsWrite):
        if expectations:  # never published unaudited (run.py keeps audited tables off the in-process path)
            raise RefreshError(f"{table} has expectations: its refresh cannot be committed in process")
        return _commit_rows(table, write, properties, refresh_id)
    if expectations:
        return _audited(catalog, table, info, write, properties, refresh_id, read_snapshot, expectations)
    if write.kept is not None:  # the expectations were dropped meanwhile: the refresh's own filter still holds
        write = replace(write, df=write.df.where(write.kept))
    with phase("write"):
        _write(write, qualified(table), properties, read_snapshot)
    with phase("read back"):
        done = committed_snapshot(catalog, table, refresh_id)
    if done.snapshot_id is not None or write.mode is not WriteMode.REPLACE_ROWS:
        return done
    # No snapshot carries the state: the MERGE changed nothing (Iceberg commits nothing then), or the engine
    # ignored the properties (a Connect server whose Iceberg predates session snapshot properties). Record the
    # state in an empty append: replacing a slice by its recompute is idempotent, so a crash between the two
    # only repeats the same replacement.
    with phase("write"):
        _writer(write.df.limit(0), qualified(table), properties).append()
    with phase("read back"):
        return committed_snapshot(catalog, table, refresh_id)


def _write(write: Write, target: str, properties: Mapping[str, str], read_snapshot: int | None) -> None:
    """``write`` into ``target`` (the table, or its staging branch) as one commit carrying ``properties``."""
    from pyspark.sql import functions as F

    if write.mode is WriteMode.REPLACE_ROWS:
        _replace_rows(target, write, dict(properties))
        return
    writer = _writer(write.df, target, properties)
    if write.mode is WriteMode.APPEND:
        writer.append()
        return
    if read_snapshot is not None:
        writer = writer.option("isolation-level", "serializable")
        writer = writer.option("validate-from-snapshot-id", str(read_snapshot))
    writer.overwrite(write.condition if write.condition is not None else F.lit(True))


def _audited(
    catalog: MaterializedCatalog,
    table: str,
    info: TableInfo,
    write: Write,
    properties: Mapping[str, str],
    refresh_id: str,
    read_snapshot: int | None,
    expectations: tuple[Expectation, ...],
) -> Committed:
    """Write, audit, publish (:mod:`.audit`): the rows staged on the audit branch by one job that also counts them
    (:mod:`.audit_write`, the ``DROP ROW`` ones' dropped rows too), the counts in a snapshot after theirs, and
    ``main`` moved there only when no ``FAIL UPDATE`` expectation failed.

    Raises:
        ExpectationsHeldError: one did; ``main`` was not moved.
    """
    session = write.df.sparkSession
    with phase("observe"):  # the counts attached to the write's plan (on Connect: the rows cached and counted)
        observed = audit_write.Observed.on(write.df, expectations)
    try:
        with phase("stage"):
            current = audit.staged(info)
            if current is None or current.head != read_snapshot:  # after a publish the branch is at main already
                audit.stage(session, table)
        with phase("write"):
            rows = observed.rows if write.kept is None else observed.rows.where(write.kept)
            _write(replace(write, df=rows), audit.branch_table(table), properties, read_snapshot)
        with phase("read back"):
            staged = audit.staged(loaded := catalog.load(table))
            if staged is None or staged.summary.get(REFRESH_ID_KEY) != refresh_id:  # a MERGE that changed nothing
                _writer(write.df.limit(0), audit.branch_table(table), properties).append()
                staged = audit.staged(loaded := catalog.load(table))
        if staged is None or staged.summary.get(REFRESH_ID_KEY) != refresh_id:
            raise RefreshError(f"{table}: the refresh's staged snapshot is not on branch {audit.BRANCH}; main kept")
        with phase("audit"):
            added = staged.summary.get("added-records", "0")
            counted = observed.audit(int(added) if write.mode is not WriteMode.REPLACE_ROWS else None)
            appended = read_snapshot if write.mode is WriteMode.APPEND else None
            counted = audit_write.completed_counts(session, table, counted, expectations, staged.snapshot_id, appended)
    finally:
        observed.release()
    state = {k: v for k, v in properties.items() if k not in (REFRESH_ID_KEY, DECISION_KEY)}  # the decision: once
    with phase("publish"):  # the counts, and main moved to them unless one FAIL UPDATE expectation failed
        over = False if counted.blocking else read_snapshot
        done = audit_write.record(catalog, loaded, state, counted, staged.snapshot_id, publish_over=over)
    if counted.blocking:
        raise audit.held_error(table, counted, read_snapshot, staged.snapshot_id)
    return _tagged(done, refresh_id)


def _writer(df: DataFrame, target: str, properties: Mapping[str, str]):  # type: ignore[no-untyped-def]
    """``df``'s DataFrameWriterV2 into ``target`` (a Spark identifier), ``properties`` in the snapshot it commits."""
    writer = df.writeTo(target)
    for key, value in properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    return writer


def _replace_rows(target: str, write: Write, properties: dict[str, str]) -> None:
    """One ``MERGE``: the rows matching ``write.replaced`` go, ``write.df``'s rows come, ``properties`` in its snapshot.

    The source is the new rows plus one marker row. A table row matching the predicate gets key 1 and matches the
    marker (key 1): deleted. New rows have no key, match nothing and are inserted. An equi-join, so Spark hashes or
    sorts instead of comparing every pair, and each table row matches at most one source row, as MERGE requires.
    """
    from mt_magic.runtime.spark.snapshot_properties import run_with_snapshot_properties

    session = write.df.sparkSession
    view = f"__mt_replace_{uuid.uuid4().hex[:12]}"
    key, source = "__mt_replace_key", "__mt_source"
    columns = [identifier(c) for c in write.df.columns]
    write.df.createOrReplaceTempView(view)
    try:
        listed = ", ".join(columns)
        marker = ", ".join(f"NULL AS {c}" for c in columns)
        sql = (
            f"MERGE INTO {target} AS {TARGET} "
            f"USING (SELECT {listed}, CAST(NULL AS INT) AS {key} FROM {identifier(view)} "
            f"UNION ALL SELECT {marker}, 1 AS {key}) AS {source} "
            f"ON (CASE WHEN {write.replaced} THEN 1 END) = {source}.{key} "
            "WHEN MATCHED THEN DELETE "
            f"WHEN NOT MATCHED AND {source}.{key} IS NULL THEN INSERT ({listed}) "
            f"VALUES ({', '.join(f'{source}.{c}' for c in columns)})"
        )
        run_with_snapshot_properties(session, properties, lambda: _command(session, sql))
    finally:
        session.catalog.dropTempView(view)


def _command(session: SparkSession, sql: str) -> None:
    session.sql(sql)


def _commit_rows(table: str, write: RowsWrite, properties: dict[str, str], refresh_id: str) -> Committed:
    from pyiceberg.exceptions import CommitFailedException

    from mt_magic.catalog.rows import commit_files

    with phase("write"):
        try:
            with reaching(table):
                commit_files(write.table, write.added, write.replaced, properties)
        except CommitFailedException as exc:
            raise RefreshConflictError(
                f"{table} changed during the refresh (another writer?); nothing was committed, the next refresh "
                f"starts from the new state. ({exc})"
            ) from exc
    with phase("read back"):  # the transaction left the committed metadata on the table object: no reload
        return _tagged(table_info(table, write.table), refresh_id)


def committed_snapshot(catalog: MaterializedCatalog, table: str, refresh_id: str) -> Committed:
    """The commit tagged ``refresh_id`` (``Committed(None, 0, None)`` when there is none)."""
    return _tagged(catalog.load(table), refresh_id)


def _tagged(info: TableInfo, refresh_id: str) -> Committed:
    for snap in reversed(info.snapshots):
        if snap.summary.get(REFRESH_ID_KEY) == refresh_id:
            return Committed(snap.snapshot_id, int(snap.summary.get("added-records", "0")), snap.committed_at, info)
    return Committed(None, 0, None, info)
