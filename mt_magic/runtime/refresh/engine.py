"""The real :class:`~mt_magic.runtime.manager.backend.RefreshBackend`: Spark jobs for data, the catalog for state.

Everything the manager learns here comes from the catalog (definitions in table properties, progress in
snapshot summaries), so a new kernel or a headless runner picks up exactly where the last one stopped.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime, timezone

from mt_magic.catalog.tables import TableInfo
from mt_magic.catalog.views import MaterializedViews
from mt_magic.errors import MtMagicError, RefreshConflictError, first_line
from mt_magic.lineage import RefreshSummary, lineage_from_environment
from mt_magic.runtime.refresh.audit import held_in_catalog
from mt_magic.runtime.refresh.context import load_source
from mt_magic.runtime.refresh.decision_summary import SparkCostsSeen
from mt_magic.runtime.refresh.recorded import refresh_records
from mt_magic.runtime.refresh.run import RefreshContext, run_refresh
from mt_magic.runtime.spark.analysis_errors import refresh_failure
from mt_magic.runtime.spark.jobs import SparkJobs, job_group_prefix
from mt_magic.runtime.spark.session_cache import SessionCache
from mt_magic.runtime.status import JobProgress, ManagedTable, RefreshOutcome, RefreshRecord, RefreshRequest
from mt_magic.runtime.workspace import Workspace
from mt_magic.scheduling.workflow import scheduler_of
from mt_magic.vocabulary import RefreshKind

CONFLICT_MARKERS = (
    "CommitFailedException",
    "Found conflicting files",
    "Found new conflicting",
    "Missing required files to delete",
    "found new delete for replaced data file",
)
"""How Iceberg's optimistic concurrency failures read through Spark (CommitFailedException, and the
ValidationExceptions of serializable and snapshot isolation)."""


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether a Spark failure is Iceberg refusing a commit because another writer committed first."""
    text = str(exc)
    return any(marker in text for marker in CONFLICT_MARKERS)


def lineage_summary(outcome: RefreshOutcome) -> RefreshSummary:
    """What the lineage run facet tells of a refresh's decision."""
    decision = outcome.decision
    measured = decision.measured if decision is not None else None
    estimates = decision.estimates if decision is not None else None
    return RefreshSummary(
        kind=outcome.kind.value,
        strategy=outcome.strategy,
        reason=decision.reason if decision is not None else "",
        rows_written=outcome.rows_written,
        snapshot_id=outcome.snapshot_id,
        engine=outcome.engine.name.lower(),
        wall_s=measured.wall_s if measured is not None else None,
        spark_task_s=measured.spark_task_s if measured is not None else None,
        bytes_read=measured.bytes_read if measured is not None else None,
        estimated_incremental_s=estimates.incremental_s if estimates is not None else None,
        estimated_full_s=estimates.full_s if estimates is not None else None,
    )


def managed_table(info: TableInfo, materialized: set[str]) -> ManagedTable:
    """The manager's view of a materialized table's catalog metadata."""
    definition = info.definition
    assert definition is not None
    last = info.last_refresh()
    return ManagedTable(
        name=info.name,
        mode=definition.refresh_mode,
        freshness=definition.interval,
        cron=definition.cron or None,
        suspended=definition.suspended,
        upstream=tuple(u for u in definition.upstream if u in materialized),
        sources=tuple(definition.upstream),
        partitioned_by=tuple(definition.partitioned_by),
        last_refresh_at=last[0].committed_at if last else None,
        mode_reason=definition.mode_reason,
        scheduler=scheduler_of(definition.options),
        held=held_in_catalog(info),
    )


class Engine:
    """Runs refreshes on Spark and answers the manager's questions from the catalog."""

    def __init__(self, workspace: Workspace, jobs: SparkJobs, session_cache: SessionCache | None = None) -> None:
        self.workspace = workspace
        self.jobs = jobs
        self.session_cache = session_cache or SessionCache()
        """The kernel's session forgets each table a refresh commits (a catalog that caches tables)."""
        self.context = RefreshContext(jobs, workspace.catalog, workspace.clock)
        self._spark_costs = SparkCostsSeen()
        """What this process's refreshes cost in Spark, counted after their commits (history adds it)."""
        self.lineage = lineage_from_environment(workspace.catalog)
        """OpenLineage events for each refresh, when configured (``OPENLINEAGE_URL``, ``openlineage.yml``, …)."""

    def discover(self, reuse: Collection[str] = frozenset()) -> Sequence[ManagedTable]:
        # raises CatalogUnavailableError, never a short list; an unchanged table is not fetched or parsed again,
        # and one in ``reuse`` is not asked about at all
        infos = self.workspace.catalog.list_materialized(reuse_unchanged=True, reuse_last=reuse)
        names = {i.name for i in infos}
        return [managed_table(i, names) for i in infos]

    def refresh(self, request: RefreshRequest) -> RefreshOutcome:
        """One refresh, THE place every path's refresh (kernel, headless runner, Airflow task) starts and ends: its
        lineage events (:mod:`mt_magic.lineage`) are sent from here."""
        if self.lineage is None:
            return self._refresh(request)
        run = self.lineage.started(request.table, request.trigger.value, request.scheduled_time)
        try:
            outcome = self._refresh(request)
        except BaseException as exc:
            self.lineage.failed(run, exc)
            raise
        self.lineage.completed(run, lineage_summary(outcome))
        return outcome

    def close(self) -> None:
        """Send the lineage events still queued (a short wait) and stop their thread."""
        if self.lineage is not None:
            self.lineage.close()

    def _refresh(self, request: RefreshRequest) -> RefreshOutcome:
        try:
            outcome = run_refresh(self.context, request)
        except MtMagicError:
            raise
        except Exception as exc:  # Spark's (Java) client failed: ask ours whether the catalog is reachable
            self.workspace.catalog.ping()
            if is_commit_conflict(exc):
                raise RefreshConflictError(f"refresh of {request.table} lost a commit race: {first_line(exc)}") from exc
            raise refresh_failure(request.table, exc) from exc
        if outcome.kind is not RefreshKind.NOOP:
            self.session_cache.forget(request.table)
        self._spark_costs.keep(outcome)
        return outcome

    def cancel(self, job_group: str) -> None:
        self.jobs.cancel(job_group)

    def wait_stopped(self, table: str, timeout: float) -> bool:
        return self.jobs.wait_finished(job_group_prefix(table), timeout)

    def progress(self, job_group: str) -> JobProgress | None:
        return self.jobs.progress(job_group)

    def pending_since(self, table: str) -> datetime | None:
        catalog = self.workspace.catalog
        # a poll that repeats every fifth of the freshness: unchanged metadata is not fetched or parsed again
        info, definition = catalog.load_materialized(table, reuse_unchanged=True)
        last = info.last_refresh()
        oldest: datetime | None = None
        for source in definition.upstream:
            source_info = load_source(catalog, table, source, reuse_unchanged=True)
            consumed = last[1].snapshot_of(source, source_info.uuid) if last else None
            if last is None and not source_info.snapshots:
                continue
            changes_at = source_info.data_changes(consumed)
            if changes_at is None:  # the consumed snapshot is gone: assume changed since our last refresh
                since = last[0].committed_at if last else None
                changes_at = [since] if since else []
            if changes_at and (oldest is None or changes_at[0] < oldest):
                oldest = changes_at[0]
        if last is not None and last[1].definition_version != definition.definition_version:
            # ALTER … AS since the last refresh: its rows are the old query's (the materialized-view draft calls the
            # table invalid until it is refreshed), so the table is behind since it was redefined
            redefined = _redefined_at(info, last[0].committed_at)
            oldest = redefined if oldest is None else min(oldest, redefined)
        elif last is not None and (invalid := MaterializedViews(catalog).invalid_since(table, info.uuid, last)):
            # invalid by the voted text (an older record, or the view's current version is another): behind
            oldest = invalid if oldest is None else min(oldest, invalid)
        return oldest

    def history(self, table: str, limit: int = 50) -> Sequence[RefreshRecord]:
        """The table's refreshes, newest first (:func:`.recorded.refresh_records`), each decision with the Spark
        task time this process measured for it."""
        return [
            replace(r, decision=self._spark_costs.added(r.decision, r.snapshot_id))
            for r in refresh_records(self.workspace.catalog.load(table), limit)
        ]


def _redefined_at(info: TableInfo, refreshed_at: datetime) -> datetime:
    """When the table was last redefined, as near as its metadata tells: its last metadata update (the ALTER's
    commit, or a later property change), never before its last refresh."""
    updated_ms = getattr(getattr(info.iceberg, "metadata", None), "last_updated_ms", None)
    if not isinstance(updated_ms, int):
        return refreshed_at
    return max(refreshed_at, datetime.fromtimestamp(updated_ms / 1000, tz=timezone.utc))
