"""``table()`` and :class:`MaterializedTable`: a materialized table as a Python object, through the one way in
(``materialize()``, which creates or changes one and returns its handle, is :mod:`mt_magic.api.materialize`).

Example (a notebook after ``%load_ext mt_magic``, or a plain script)::

    import mt_magic

    daily = mt_magic.table("daily_orders")
    daily.status.state          # JobState.SCHEDULED
    daily.refresh(wait=True)    # a manual refresh, finished (or its error raised)
    daily.history()             # a pandas DataFrame, newest first
    daily.explain_change(freshness="1 hour")   # what SET FRESHNESS would do, nothing written
    daily.to_pandas()
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from mt_magic.api import explaining, session
from mt_magic.api import statements as build
from mt_magic.errors import MtMagicError
from mt_magic.sql.names import TableName
from mt_magic.vocabulary import StatementAction

if TYPE_CHECKING:
    import pandas
    from pyspark.sql import DataFrame

    from mt_magic.runtime.graph import Lineage
    from mt_magic.runtime.inspect.change_preview import ChangePreview
    from mt_magic.runtime.inspect.verify import Verification
    from mt_magic.runtime.refresh.incremental.explain import Explanation
    from mt_magic.runtime.results import StatementResult
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.runtime.status import Decision, TableStatus
    from mt_magic.vocabulary import RefreshMode

HISTORY_COLUMNS = (
    "started_at",
    "kind",
    "trigger",
    "duration_s",
    "rows_written",
    "snapshot_id",
    "strategy",
    "engine",
    "staleness_before_s",
    "error",
    "chosen",
    "change_rows",
    "change_ratio",
    "est_incremental_s",
    "est_full_s",
    "estimate_basis",
    "spark_task_s",
    "spark_jobs",
    "bytes_read",
    "bytes_written",
    "rows_removed",
    "expectations",
)
"""One row per refresh. ``strategy`` is the refresh's reason (its strategy line); ``chosen`` onwards is its
decision record (``None``: not recorded — a failure, an older commit — or not measured, e.g. Spark task time of a
refresh another process ran); ``expectations``: each expectation's passed, dropped and failed rows (``None``: the
table has none)."""


def _decision_columns(decision: Decision | None) -> tuple[object, ...]:
    """The decision record's columns of :data:`HISTORY_COLUMNS` (all ``None`` without one)."""
    if decision is None:
        return (None,) * 11
    change, estimates, measured = decision.change, decision.estimates, decision.measured
    return (
        decision.chosen.value,
        change.rows if change is not None else None,
        change.ratio if change is not None else None,
        estimates.incremental_s if estimates is not None else None,
        estimates.full_s if estimates is not None else None,
        estimates.basis if estimates is not None else None,
        measured.spark_task_s,
        measured.spark_jobs,
        measured.bytes_read,
        measured.bytes_written,
        measured.rows_removed,
    )


class MaterializedTable:
    """A handle on one materialized table (FLIP-616's ``fromMaterializedTable()``): every property and method
    asks the service at the time of the call, so the handle never holds stale facts.

    Args:
        name: the table's qualified name (``catalog.namespace.table``).
        service: the service to ask; ``None`` means the kernel's or this process's (see :mod:`.session`).
    """

    def __init__(self, name: str, service: MaterializedTables | None = None) -> None:
        self.name = name
        self._service = service

    def __repr__(self) -> str:
        return f"MaterializedTable({self.name!r})"

    @property
    def service(self) -> MaterializedTables:
        return self._service or session.service()

    # --- what it is ------------------------------------------------------------------------------------

    @property
    def status(self) -> TableStatus:
        """State, freshness, refresh mode, last refresh and staleness, as the manager sees them now.

        >>> table("daily_orders").status.staleness  # doctest: +SKIP
        datetime.timedelta(seconds=12)
        """
        return self.service.status(self.name)

    @property
    def lineage(self) -> Lineage:
        """The dependency graph around this table: what it reads and what reads it."""
        return self.service.lineage(self.name)

    def history(self) -> pandas.DataFrame:
        """Committed refreshes (and the failures this process saw), newest first, one row each
        (columns: :data:`HISTORY_COLUMNS`; durations and staleness in seconds)."""
        import pandas

        rows = [
            (
                r.started_at,
                r.kind.value,
                r.trigger.value,
                r.duration.total_seconds(),
                r.rows_written,
                r.snapshot_id,
                r.strategy,
                r.engine.value if r.engine is not None else None,
                r.staleness_before.total_seconds() if r.staleness_before is not None else None,
                r.error,
                *_decision_columns(r.decision),
                {e.name: {"passed": e.passed, "dropped": e.dropped, "failed": e.failed} for e in r.expectations}
                or None,
            )
            for r in self.service.history(self.name).records
        ]
        return pandas.DataFrame(rows, columns=list(HISTORY_COLUMNS))

    def verify(self) -> Verification:
        """The query recomputed beside the table, nothing committed, and compared: ``.equal``, or the rows that
        differ (``.missing``, ``.extra``, samples) and the commit that most likely made them (``%mt verify``).

        >>> table("daily_orders").verify().differences  # doctest: +SKIP
        0
        """
        return self.service.verify(self.name)

    def explain(self) -> Explanation:
        """How the table refreshes and why (``mt_magic.explain(name)``, ``%mt explain name``)."""
        return explaining.explained_by(self.service, TableName.from_parts(self.name.split(".")))

    def explain_change(
        self,
        *,
        query: str | None = None,
        freshness: build.FreshnessArg | None = None,
        refresh_mode: RefreshMode | str | None = None,
        resume: bool | Mapping[str, build.OptionValue] = False,
    ) -> ChangePreview:
        """What one change would do, before it is made, and nothing written: ``ALTER … AS query``, ``SET FRESHNESS``
        (as :func:`materialize` takes it), ``SET REFRESH_MODE`` or ``RESUME`` (``resume``: ``True`` or its
        ``WITH`` options) — the preview ``mt_magic.explain`` gives that statement: rows kept or rebuilt, the
        refreshes after it and their cost predicted from the table's history.

        >>> print(table("daily_orders").explain_change(freshness="1 hour"))  # doctest: +SKIP

        Raises:
            MtMagicError: none of the four or more than one (previews do not add up), or what the statement would
                be refused for; nothing changed.
        """
        where = f"mt_magic.table({self.name!r}).explain_change"
        target = TableName.from_parts(self.name.split("."))
        service = self.service
        stmt = build.change(
            target, service.workspace.rules, where, query=query, fresh=freshness, mode=refresh_mode, resume=resume
        )
        return explaining.explained_by(service, stmt)

    # --- controls ----------------------------------------------------------------------------------------

    def refresh(
        self, partition: build.PartitionArg | None = None, *, wait: bool = True, cascade: bool = False
    ) -> StatementResult:
        """Refresh now (``ALTER … REFRESH [PARTITION (…)]``); ``wait`` blocks until it is done and raises its error.

        >>> table("daily_orders").refresh(partition={"ds": "20250101"})  # doctest: +SKIP

        Raises:
            SqlError: ``partition`` is not a partition spec.
            DefinitionError: a key is not a partition column of the table.
            RefreshError: the refresh failed (``wait=True``).
        """
        spec = build.partition(partition) if partition else ()
        return waited(self.service.refresh(self.name, spec, cascade), wait)

    def suspend(self) -> StatementResult:
        """``ALTER … SUSPEND``: no refreshes until :meth:`resume`."""
        return self.service.suspend(self.name)

    def resume(self, options: Mapping[str, build.OptionValue] | None = None) -> StatementResult:
        """``ALTER … RESUME [WITH (…)]``; ``options`` are Spark settings of this resumption's refreshes."""
        pairs = tuple((k, build.option_text(v)) for k, v in (options or {}).items())
        return self.service.resume(self.name, pairs)

    def drop(self, *, cascade: bool = False) -> StatementResult:
        """``DROP MATERIALIZED TABLE`` (with ``cascade``, the tables reading it too); the handle is then stale.

        Raises:
            DependencyError: other materialized tables read it and ``cascade`` is False.
        """
        return self.service.drop(self.name, False, cascade)

    # --- reads --------------------------------------------------------------------------------------------

    def to_spark(self) -> DataFrame:
        """The table's rows as a Spark DataFrame (lazy: no Spark job until you act on it)."""
        return self.service.rows(self.name)

    def to_pandas(self, limit: int | None = None) -> pandas.DataFrame:
        """The table's rows (at most ``limit``) as a pandas DataFrame."""
        rows = self.to_spark()
        return (rows.limit(limit) if limit is not None else rows).toPandas()


def table(name: str) -> MaterializedTable:
    """The materialized table ``name`` (written as in a cell: ``daily``, ``ns.daily``, ``ns.`my table```).

    >>> mt_magic.table("daily_orders").status.state  # doctest: +SKIP
    <JobState.SCHEDULED: 'scheduled'>

    Raises:
        SqlError: not one table name.
        NoSuchMaterializedTableError: no such table, or a plain Iceberg table (the message says which).
    """
    service = session.service()
    qualified = service.workspace.qualify(build.table_name(name))
    service.workspace.catalog.load_materialized(qualified)
    return MaterializedTable(qualified)


def waited(result: StatementResult, wait: bool) -> StatementResult:
    """Wait for the refresh ``result`` started, if asked, and raise its error as the magics' ``--wait`` does (a
    handle's refresh, :func:`~mt_magic.api.materialize.materialize`'s first refresh)."""
    if wait and result.refresh is not None:
        concurrent.futures.wait([result.refresh])
        error = result.refresh.exception()
        if error is not None:
            raise error if isinstance(error, MtMagicError) else MtMagicError(str(error))
        if result.action is StatementAction.REFRESHING:  # not "Refreshing …" once it is done
            outcome = result.refresh.result()
            done = f"{outcome.strategy or outcome.kind.value}, {outcome.rows_written} row(s) written"
            what = result.message.removeprefix("Refreshing ").rstrip(".")
            return replace(result, message=f"Refreshed {what}: {done}.")
    return result
