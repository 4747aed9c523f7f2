"""The service's questions (no statement changes anything here): SHOW, DESCRIBE, statuses and events,
history, lineage, explain and previews — metadata from the catalog plus what this kernel's manager knows."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from mt_magic.errors import NoSuchMaterializedTableError
from mt_magic.runtime.graph import Lineage, lineage
from mt_magic.runtime.inspect.describe import create_statement, table_description, tables_listing
from mt_magic.runtime.inspect.history import refresh_history, with_stall_marks
from mt_magic.runtime.refresh.context import missing_source
from mt_magic.runtime.results import StatementResult, TableHistory
from mt_magic.runtime.status import RefreshEvent, TableStatus
from mt_magic.vocabulary import StatementAction, is_hidden_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from mt_magic.catalog.definitions import MaterializedTableDefinition
    from mt_magic.runtime.inspect.verify import Verification
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.runtime.refresh.engine import Engine
    from mt_magic.runtime.refresh.incremental.explain import Explanation
    from mt_magic.runtime.spark.preview import Preview
    from mt_magic.runtime.workspace import Workspace
    from mt_magic.scheduling.airflow_runs import AirflowRunView
    from mt_magic.sql.ddl.statements import CreateMaterializedTable


class Inspection:
    """The read-only half of :class:`~mt_magic.runtime.service.MaterializedTables`.

    Args:
        engine: reads the catalog and the tables.
        manager: what this kernel knows of each table (statuses, events, failures).
        track: makes sure the manager knows a table the catalog has (a status asked for before it is tracked).
        airflow_runs: what Airflow last said of a table on Airflow, at once (``None``: not asked yet).
    """

    def __init__(
        self,
        engine: Engine,
        manager: RefreshManager,
        *,
        track: Callable[[str], None],
        airflow_runs: Callable[[str], AirflowRunView | None],
    ) -> None:
        self.engine = engine
        self.manager = manager
        self._track = track
        self._airflow_runs = airflow_runs

    @property
    def workspace(self) -> Workspace:
        return self.engine.workspace

    def airflow_run(self, name: str) -> AirflowRunView | None:
        """Airflow's last run, log link and next run of a table on Airflow, as last polled (never waits)."""
        return self._airflow_runs(name)

    # --- statements that only look --------------------------------------------------------------------

    def show_tables(self, namespace: str | None = None, like: str | None = None) -> StatementResult:
        if namespace is not None:
            namespace = self.workspace.qualify_namespace(namespace)
        # each table unchanged since this process last read it (the manager's discovery) is a 304, not parsed again
        tables = self.workspace.catalog.list_materialized(namespace, reuse_unchanged=True)
        statuses = {s.name: s for s in self.manager.statuses(info.name for info in tables)}
        listing = tables_listing(tables, statuses, namespace, like)
        where = f" in {namespace}" if namespace else ""
        return StatementResult(
            StatementAction.SHOWN, (), f"{len(listing.rows)} materialized table(s){where}.", listing=listing
        )

    def show_create(self, name: str) -> StatementResult:
        info, definition = self.workspace.catalog.load_materialized(name)
        return StatementResult(
            StatementAction.SHOWN,
            (),
            f"SHOW CREATE MATERIALIZED TABLE {name}",
            listing=create_statement(info, definition),
        )

    def describe(self, name: str) -> StatementResult:
        from mt_magic.catalog.views import MaterializedViews

        info, definition = self.workspace.catalog.load_materialized(name)
        status = self.manager.status(name) if self.manager.knows(name) else None
        views = MaterializedViews(self.workspace.catalog)
        view = views.of_table(name, info.uuid) if views.supported() else None
        return StatementResult(
            StatementAction.SHOWN,
            (),
            f"DESCRIBE MATERIALIZED TABLE {name}",
            listing=table_description(
                info,
                definition,
                status,
                view,
                self._airflow_facts(name, definition),
                missing_source(self.workspace.catalog, name, definition.upstream),
            ),
        )

    def _airflow_facts(self, name: str, definition: MaterializedTableDefinition) -> list[tuple[str, str]]:
        """Airflow's view of a table on Airflow, as last polled (DESCRIBE never waits on Airflow)."""
        from mt_magic.scheduling.airflow_runs import run_facts
        from mt_magic.scheduling.workflow import scheduler_of
        from mt_magic.vocabulary import WorkflowSchedulerKind

        if scheduler_of(definition.options) is not WorkflowSchedulerKind.AIRFLOW:
            return []
        return run_facts(self.airflow_run(name))

    # --- what the views read ----------------------------------------------------------------------------

    def status(self, name: str) -> TableStatus:
        """The table's current status (tracked on demand if the catalog has it but the manager does not)."""
        self._track(name)
        return self.manager.status(name)

    def statuses(self) -> list[TableStatus]:
        return self.manager.statuses()

    def subscribe(self, callback: Callable[[RefreshEvent], None]) -> Callable[[], None]:
        return self.manager.subscribe(callback)

    def version(self) -> int:
        """The manager's change count (:meth:`RefreshManager.version`)."""
        return self.manager.version()

    def history(self, name: str) -> TableHistory:
        """Committed refreshes from the catalog plus the failures this kernel saw, newest first."""
        _, definition = self.workspace.catalog.load_materialized(name)
        records = refresh_history(self.engine, name)
        if self.manager.knows(name):
            records = with_stall_marks(records, self.manager.status(name).recent)
            records = sorted([*records, *self.manager.failures(name)], key=lambda r: r.started_at, reverse=True)
        freshness = definition.interval or None
        return TableHistory(name, tuple(records), freshness)

    def lineage(self, focus: str | None = None) -> Lineage:
        """The dependency graph, or the part of it around ``focus``.

        Raises:
            NoSuchMaterializedTableError: ``focus`` is neither a materialized table nor one of their sources.
        """
        graph = lineage(self.workspace)
        if focus is None:
            return graph
        if focus not in graph.nodes:
            raise NoSuchMaterializedTableError(f"{focus} is not a materialized table or one of their sources.")
        return graph.around(focus)

    def explain(self, target: CreateMaterializedTable | str) -> Explanation:
        """How a table (by name) or a CREATE statement refreshes, and why, with the Spark jobs its refreshes in this
        process ran; metadata only."""
        from mt_magic.runtime.refresh.incremental.explain import explain, spark_jobs_line

        explained = explain(self.workspace, target)
        if not isinstance(target, str):
            return explained
        return dataclasses.replace(explained, spark_jobs=spark_jobs_line(self.engine.history(explained.table)))

    def preview(self, name: str, limit: int) -> Preview:
        """The newest ``limit`` rows (runs Spark: never call it on the manager's thread)."""
        from mt_magic.runtime.spark.preview import preview

        return preview(self.workspace, name, limit)

    def pending_since(self, name: str) -> datetime | None:
        """Commit time of the oldest source change ``name`` does not reflect yet (``None``: caught up); the
        catalog's answer, the same in every process."""
        return self.engine.pending_since(name)

    def verify(self, name: str) -> Verification:
        """``name``'s query recomputed beside it, nothing committed, compared (runs Spark; :mod:`.verify`)."""
        from mt_magic.runtime.inspect.verify import verify

        return verify(self.workspace, name)

    def rows(self, name: str) -> DataFrame:
        """The table's stored rows (lazy: no Spark job until the caller acts), without its hidden key columns."""
        from mt_magic.runtime.spark.quoting import qualified

        frame = self.workspace.spark.table(qualified(name))
        hidden = [c for c in frame.columns if is_hidden_column(c)]
        return frame.drop(*hidden) if hidden else frame
