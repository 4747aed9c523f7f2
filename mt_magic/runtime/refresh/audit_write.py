"""Counting a refresh's expectations on its own write: Spark's observed metrics (``DataFrame.observe``) count every
row condition's failing rows as the write to the staging branch passes them, so the rows are computed once (an
expectation over groups of rows is counted on the staged snapshot after the write: :mod:`.audit_groups`).

The counts are known after the write's commit, so they cannot be in its snapshot: they follow it on the staging
branch in an empty snapshot of their own (:func:`record`), and ``main`` is moved to that snapshot. Where a ``FAIL
UPDATE`` expectation failed, a sample of its failing rows is read from the staged snapshot
(:func:`completed_counts`) for this process's held message and card only: the counts' summary never carries it
(catalog metadata, see :mod:`.audit`).
On Spark Connect the rows are counted first on the rows kept in Spark's cache instead (:func:`count`): a ``MERGE``'s
observed metrics (a SQL command's) never reach the client, and a write's reach it only if the server's listener
delivered them within the 100 ms Spark 4's Connect server waits for them (``Observation.getRowOrEmpty``), which a
loaded machine misses. On classic Spark the counts come on Spark's listener bus after the write returns: the refresh
waits for them at most :data:`OBSERVATION_WAIT_S` (then a :class:`~mt_magic.errors.RefreshError`, ``main`` not moved),
and an observation whose write failed before running leaves no listener behind (:meth:`Observed.release`).

Where Spark runs part of the write twice (a table with a sort order: its range partitioning reads the rows once to
sample them; a stage retried in a cluster) the observation sees those rows again: a count that is an exact multiple
of the rows the write added is divided back (:meth:`Observed.audit`); the hold itself depends only on whether a
``FAIL UPDATE`` expectation failed at all, which repeating rows does not change.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.tables import MaterializedCatalog, TableInfo, reaching, table_info
from mt_magic.errors import RefreshConflictError, RefreshError
from mt_magic.runtime.refresh.audit import (
    BRANCH,
    COUNTS_OF_KEY,
    Audit,
    Counted,
    failing_sample,
    kept,
    passes,
    shown_columns,
)
from mt_magic.runtime.refresh.audit_groups import grouped, row_level, with_group_counts
from mt_magic.runtime.spark.connect import is_connect
from mt_magic.runtime.spark.quoting import qualified
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.vocabulary import Expectation, OnViolation

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

OBSERVATION_WAIT_S = 120.0
"""How long a refresh waits, once its write returned, for Spark's listener to hand over the write's counts (classic
Spark delivers them on its listener bus, after the write; a bus that never does would otherwise hang the refresh)."""


@dataclass
class Observed:
    """A refresh's rows with every expectation counted on the job that writes them."""

    rows: DataFrame
    """Write these (the ``DROP ROW`` filter goes on top): the job that writes them counts them."""
    expectations: tuple[Expectation, ...]
    observation: Any = None
    counted: Audit | None = None
    """Counted before the write (on Connect: the rows cached, :func:`count`)."""
    delivered: bool = False
    """The observation's counts were read: Spark removed its listener itself."""

    @classmethod
    def on(cls, df: DataFrame, expectations: tuple[Expectation, ...]) -> Observed:
        """``df`` observed (on Connect: cached and counted, see the module) for the row conditions among
        ``expectations`` (those over groups are counted on the staged snapshot: :func:`completed_counts`)."""
        expectations = row_level(expectations)
        if is_connect(df.sparkSession):
            from pyspark import StorageLevel

            cached = df.persist(StorageLevel.MEMORY_AND_DISK)
            return cls(cached, expectations, counted=count(cached, expectations))
        from pyspark.sql import Observation

        observation = Observation(f"mt_audit_{uuid.uuid4().hex}")
        return cls(df.observe(observation, _counts_column(expectations)), expectations, observation)

    def release(self) -> None:
        """Let go of what counting holds, whether the write ran or failed: the cached rows (Connect), or the
        observation's listener when no write delivered its counts (Spark 3.5 registers one per observation and
        removes it only then, :func:`_forget`)."""
        if self.counted is not None:
            self.rows.unpersist()
        elif self.observation is not None and not self.delivered:
            _forget(self.rows.sparkSession, self.observation)

    def audit(self, written: int | None, wait_s: float = OBSERVATION_WAIT_S) -> Audit:
        """The counts the write's job observed; ``written``: the rows its snapshot added where that is exactly the
        kept rows (an append or a whole-table overwrite), to undo a repeated reading (see the module).

        Raises:
            RefreshError: Spark did not hand over the counts within ``wait_s`` (``main`` not moved).
        """
        if self.counted is not None:
            return self.counted
        metrics = _delivered(self.observation, wait_s).get(COUNTS)
        self.delivered = True
        if metrics is None:
            raise RuntimeError("the refresh's write returned no observed counts")
        kept = int(metrics["kept"] or 0)
        repeats = kept // written if written and kept > written and kept % written == 0 else 1
        return _audit_of(self.expectations, metrics, repeats)


def _delivered(observation: Any, wait_s: float) -> dict[str, Any]:
    """A classic observation's counts, once Spark's listener delivered them (waiting at most ``wait_s``), read in one
    call as JSON: pyspark's ``Observation.get`` waits without a limit and reads Spark's map entry by entry (a py4j
    round trip each, and a Java exception to end the iteration: ~80 round trips for three expectations).

    Raises:
        RefreshError: not delivered within ``wait_s``.
    """
    jo, jvm = observation._jo, observation._jvm  # pyspark's handle on Spark's Observation (3.5 and 4.x classic)
    future = jo.future()
    if not future.isCompleted():
        try:
            jvm.scala.concurrent.Await.ready(future, jvm.scala.concurrent.duration.Duration.create(f"{wait_s} s"))
        except Exception:  # Spark's TimeoutException, as py4j hands it over: the check below tells what happened
            pass
        if not future.isCompleted():
            raise RefreshError(
                f"the refresh's write committed its rows to branch {BRANCH}, but Spark's listener did not hand over "
                f"the expectations' counts within {wait_s:g} s; main was not moved",
                fix="refresh again (the staged rows are replaced); if it repeats, Spark's listener bus is stalled or "
                "dropping events (see the driver log for 'Dropping event'): restart the Spark session",
            )
    try:
        return dict(json.loads(jo.getRow().json()))
    except Exception:  # Row.empty, which has no schema to write: the query ended without the counts
        return {}


def _forget(session: SparkSession, observation: Any) -> None:
    """Remove the listener a classic Spark 3.5 observation registered when no query delivered its counts (a write
    that failed before it ran): Spark removes it only on delivery, and a kept one sees every later query of the
    session. Spark 4 keeps one listener per session instead (nothing to remove here)."""
    jo = observation._jo
    if jo is None or jo.future().isCompleted():
        return
    manager = session._jsparkSession.listenerManager()
    for listener in manager.listListeners():
        if listener.getClass().getName() == "org.apache.spark.sql.ObservationListener" and listener.observation() == jo:
            manager.unregister(listener)


COUNTS = "counts"
"""The one observed (or aggregated) column holding every count: a struct of ``rows``, ``kept`` and ``f<i>``, the
rows failing expectation ``i`` (:func:`_counts_column`)."""


def _counts_column(expectations: tuple[Expectation, ...]) -> Any:
    """Rows, kept rows and each expectation's failing rows as one struct column (the aggregation :func:`count` runs),
    built from one SQL expression: one py4j call, not one per count."""
    from pyspark.sql import functions as F

    stays, failing = failing_conditions(expectations)
    sums = [("kept", stays), *((f"f{i}", f) for i, f in enumerate(failing))]
    fields = ", ".join(f"'{n}', sum(CASE WHEN {c} THEN 1 ELSE 0 END)" for n, c in sums)
    return F.expr(f"named_struct('rows', count(1), {fields}) AS `{COUNTS}`")


def _audit_of(expectations: tuple[Expectation, ...], counts: Mapping[str, Any], repeats: int = 1) -> Audit:
    """The :class:`Audit` of :func:`_counts_column`'s struct (a sum over no rows is NULL: 0), each count divided by
    ``repeats`` (rows Spark read more than once, see :meth:`Observed.audit`)."""
    total, kept_rows = int(counts["rows"] or 0), int(counts["kept"] or 0)
    return Audit(
        tuple(
            Counted(
                e.name,
                e.on_violation,
                (total if e.on_violation is OnViolation.DROP_ROW else kept_rows) // repeats,
                int(counts[f"f{i}"] or 0) // repeats,
            )
            for i, e in enumerate(expectations)
        )
    )


def failing_conditions(expectations: tuple[Expectation, ...]) -> tuple[str, list[str]]:
    """(Spark SQL TRUE for a row the ``DROP ROW`` expectations keep, TRUE for a row failing each expectation): a
    ``DROP ROW`` one fails on any row, its failing rows are the dropped ones; every other one on the rows the table
    receives."""
    stays = kept(expectations) or "TRUE"
    failing = [
        f"NOT {passes(e)}" if e.on_violation is OnViolation.DROP_ROW else f"({stays}) AND NOT {passes(e)}"
        for e in expectations
    ]
    return stays, failing


def count(df: DataFrame, expectations: tuple[Expectation, ...]) -> Audit:
    """Each expectation's failing rows among ``df``'s in one aggregation (a job of its own: the rows must be cached;
    the refresh's write counts them itself where it can, :mod:`.audit_write`).

    ``df`` holds the rows before the ``DROP ROW`` filter (:func:`kept`; rows already filtered count the same, none
    dropped): a ``DROP ROW`` expectation is counted on all of them, every other one on the rows they keep."""
    row = df.agg(_counts_column(expectations)).first()
    if row is None:
        raise RuntimeError("an aggregation without GROUP BY returned no row")
    return _audit_of(expectations, row[COUNTS].asDict())


def staged_table_rows(session: SparkSession, table: str, snapshot: int, added_since: int | None) -> DataFrame:
    """``table``'s rows at ``snapshot`` (a staged one), or only those appended after ``added_since``."""
    if added_since is None:
        return table_at(session, table, snapshot)
    reader = session.read.option("start-snapshot-id", str(added_since)).option("end-snapshot-id", str(snapshot))
    return reader.table(qualified(table))


def completed_counts(
    session: SparkSession,
    table: str,
    counted: Audit,
    expectations: tuple[Expectation, ...],
    staged: int,
    added_since: int | None,
) -> Audit:
    """``counted`` (the write's counts of the row conditions) completed on the staged snapshot: the expectations
    over groups counted there (:mod:`.audit_groups`, on the groups the rows added after ``added_since`` touched
    where the refresh appended), and a few failing rows of each ``FAIL UPDATE`` expectation that failed (the rows
    it added where it appended): only a held refresh reads those, and the sample stays in memory
    (:attr:`.audit.Counted.sample`)."""
    from pyspark.sql import functions as F

    if grouped(expectations):  # a table without one reads nothing more here
        added = None if added_since is None else staged_table_rows(session, table, staged, added_since)
        counted = with_group_counts(session, table, counted, expectations, staged, added)
    rows_failed = {e.name for e in row_level(expectations)} & {c.name for c in counted.blocking}
    if not rows_failed:
        return counted
    rows = staged_table_rows(session, table, staged, added_since)
    visible = shown_columns(rows.columns)
    conditions = {e.name: e for e in expectations}
    shown = []
    for c in counted.counts:
        if c.name in rows_failed:
            c = replace(c, sample=failing_sample(rows.where(~F.expr(passes(conditions[c.name]))), visible))
        shown.append(c)
    return Audit(tuple(shown))


def record(
    catalog: MaterializedCatalog,
    staged: TableInfo,
    state: Mapping[str, str],
    counted: Audit,
    refreshed: int,
    publish_over: int | None | bool = False,
) -> TableInfo:
    """The counts of the refresh committed as snapshot ``refreshed`` in an empty snapshot after it on the staging
    branch of ``staged`` (the table as read after that commit), with the refresh's ``state`` again (what ``main``'s
    current snapshot must carry): what history, the card and a held refresh's readers find (:func:`.audit.staged`);
    names and numbers only, no sample of rows (:meth:`.audit.Audit.summary`).
    Unless ``publish_over`` is ``False``, the same commit moves ``main`` to that snapshot, asserting ``main`` is still
    at ``publish_over`` (``None``: the table has no snapshot yet). One catalog commit through pyiceberg, no Spark job.

    Returns:
        The table as the commit left it.

    Raises:
        RefreshConflictError: the branch or ``main`` moved since (another writer); nothing was committed.
    """
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.table.refs import MAIN_BRANCH
    from pyiceberg.table.update.snapshot import ManageSnapshots

    from mt_magic.catalog.rows import without_retries

    table = without_retries(catalog.iceberg_table_of(staged))
    properties = {**state, **counted.summary(), COUNTS_OF_KEY: str(refreshed)}
    moved = publish_over is not False and table.metadata.current_snapshot_id != publish_over
    try:
        if moved:
            raise CommitFailedException(f"main is at {table.metadata.current_snapshot_id}, not {publish_over}")
        with reaching(staged.name), table.transaction() as transaction:
            with transaction.update_snapshot(snapshot_properties=properties, branch=BRANCH).fast_append() as counts:
                pass  # no files: the snapshot carries the summary
            if publish_over is not False:  # main fast-forwarded to it (its parent's parent is main)
                with ManageSnapshots(transaction) as refs:  # its id from the append: no copy of the metadata
                    refs.create_branch(counts.snapshot_id, MAIN_BRANCH)
    except CommitFailedException as exc:
        raise RefreshConflictError(
            f"{staged.name} changed while its refresh was audited (another writer?); main was not moved, the next "
            f"refresh starts from the new state. ({exc})"
        ) from exc
    return table_info(staged.name, table)
