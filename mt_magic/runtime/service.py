"""The only way in: every statement, control, status and view of materialized tables goes through here.

The magics, the widgets' buttons and the headless runner call these methods and nothing below them. Every
refresh goes through the :class:`~mt_magic.runtime.manager.RefreshManager`: with its thread running the
cell returns at once; an *inline* manager (no thread: scripts, tests) runs the same refresh, cascade and
commit path within the call, on the calling thread.

Each statement is its handler's (:mod:`.statements`, found by the statement's type in ``statements.registry``): it
checks everything that can fail before it changes anything, so a refused statement leaves the catalog, the manager
and the cards as they were.
The named entry points (``create``, ``drop``, ``suspend``, ``refresh``, …) are the handlers' own paths, for callers
that hold a name rather than a statement.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mt_magic.errors import NoSuchMaterializedTableError
from mt_magic.runtime.inspect.questions import Inspection
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.refresh.engine import Engine, managed_table
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import alter
from mt_magic.runtime.statements.alter import Partition
from mt_magic.runtime.statements.registry import handler_for
from mt_magic.runtime.workflows import KernelWorkflows, Workflows
from mt_magic.sql.ddl.statements import (
    AlterFreshness,
    AlterQuery,
    AlterRefresh,
    AlterRefreshMode,
    AlterRename,
    AlterResume,
    AlterScheduler,
    AlterSuspend,
    AnyStatement,
    CreateMaterializedTable,
    DropMaterializedTable,
    Freshness,
    ShowMaterializedTables,
)
from mt_magic.sql.names import Position, TableName
from mt_magic.vocabulary import RefreshMode, RefreshTrigger, StatementAction

if TYPE_CHECKING:
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.runtime.status import ManagedTable
    from mt_magic.sql.ddl.freshness import FreshnessRules


class MaterializedTables(Inspection):
    """Executes statements and answers questions about materialized tables.

    Args:
        engine: runs refreshes on Spark and reads the catalog.
        manager: every refresh goes through it; ``background=False`` means nobody runs its thread and this
            service drives it inline (each request finishes within the call).
    """

    def __init__(self, engine: Engine, manager: RefreshManager, *, background: bool) -> None:
        self.background = background
        self.workflows = Workflows()
        """Which workflow scheduler runs each table (FLIP-448's seam): this kernel's manager, or Airflow."""
        super().__init__(engine, manager, track=self.track, airflow_runs=self.workflows.airflow_run)
        self.kernel = KernelWorkflows(manager, self.managed, self.drive)
        """The kernel's side of every table (on Airflow too: the cards show it)."""

    @classmethod
    def inline(cls, engine: Engine, retry: RetryPolicy | None = None) -> MaterializedTables:
        """A service whose refreshes run within each call, through an inline manager (no thread)."""
        from mt_magic.runtime.manager.loop import InlineExecutor
        from mt_magic.runtime.manager.refresh_manager import RefreshManager

        manager = RefreshManager(
            engine,
            clock=engine.workspace.clock,
            retry=retry or RetryPolicy(),
            executor=InlineExecutor(),
            scheduling=False,
        )
        return cls(engine, manager, background=False)

    def set_rules(self, rules: FreshnessRules) -> None:
        """Apply new FRESHNESS rules (``%config``) to the statements that follow; existing tables keep theirs."""
        self.engine.workspace = replace(self.engine.workspace, rules=rules)

    # --- statements -------------------------------------------------------------------------------------

    def execute(
        self, stmt: AnyStatement, cascade: bool = False, *, checked: bool = False, plan: object = None
    ) -> StatementResult:
        """Apply one statement through its handler (:mod:`.statements.registry`), after its checks against the
        catalog and its scheduler (``checked``: its cell ran them, :func:`.cell.check_cell`, and ``plan`` is what
        that check read for the apply). ``cascade`` extends REFRESH and DROP to downstream materialized tables.

        Each handler resolves nothing itself but the names it is given, and reads the table it changes once, first
        (an unknown name fails there, before anything changes). After a statement that may have committed, the
        kernel's session forgets the tables it names (:mod:`.spark.session_cache`).
        """
        handler = handler_for(stmt)
        try:
            if not checked:  # a statement on its own: its check hands what it read to its apply
                plan = handler.check_current(self, stmt, cascade)
            result = handler.apply(self, stmt, cascade, plan)
        except NoSuchMaterializedTableError as exc:
            raise self._named_table_missing(stmt) or exc from None
        touched = handler.touched(self.workspace, stmt)
        if touched:
            self.engine.session_cache.forget(*touched)
        return result

    def _named_table_missing(self, stmt: AnyStatement) -> NoSuchMaterializedTableError | None:
        """The error of a statement naming a table that does not exist, with the statement's verb (its handler's),
        a "did you mean" and a Fix; ``None`` when the named table exists (the error was about another table)."""
        from mt_magic.runtime.statements.definition import missing_fix

        verb = handler_for(stmt).verb
        if verb is None or isinstance(stmt, ShowMaterializedTables):
            return None
        name = self.workspace.qualify(stmt.name)
        if self.workspace.catalog.exists(name):
            return None
        skip = " (DROP MATERIALIZED TABLE IF EXISTS skips a missing table.)" if verb == "DROP" else ""
        return NoSuchMaterializedTableError(
            f"{verb} MATERIALIZED TABLE {stmt.name}: {name} does not exist. {missing_fix(self.workspace, name)}{skip}"
        )

    # The entry points of the widgets, the Python API and the runner, for callers holding a name: each is the statement
    # it stands for, run by its handler (HANDLERS: the one mapping of statement to check and apply).

    def create(self, stmt: CreateMaterializedTable) -> StatementResult:
        return self.execute(stmt)

    def alter_query(self, name: str, query: str, query_position: Position | None = None) -> StatementResult:
        return self.execute(AlterQuery(**_named(name), query=query, query_position=query_position))

    def set_freshness(self, name: str, freshness: Freshness) -> StatementResult:
        """``ALTER … SET FRESHNESS`` and the card's freshness control: persist, then reschedule."""
        return self.execute(AlterFreshness(**_named(name), freshness=freshness))

    def set_refresh_mode(self, name: str, mode: RefreshMode) -> StatementResult:
        """``ALTER … SET REFRESH_MODE``: the new schedule takes over from the last committed refresh state."""
        return self.execute(AlterRefreshMode(**_named(name), mode=mode))

    def set_scheduler(self, name: str, scheduler: str) -> StatementResult:
        """``ALTER … SET ('scheduler' = …)``: move the table between this kernel's manager and Airflow."""
        return self.execute(AlterScheduler(**_named(name), scheduler=scheduler))

    def rename(self, name: str, new_name: str) -> StatementResult:
        """``ALTER … RENAME TO``: the manager, lineage, the readers' definitions and the cards follow."""
        return self.execute(AlterRename(**_named(name), new_name=_table_name(new_name)))

    def suspend(self, name: str) -> StatementResult:
        return self.execute(AlterSuspend(**_named(name)))

    def resume(self, name: str, options: Partition = ()) -> StatementResult:
        return self.execute(AlterResume(**_named(name), options=options))

    def refresh(
        self,
        name: str,
        partition: Partition = (),
        cascade: bool = False,
        trigger: RefreshTrigger = RefreshTrigger.MANUAL,
    ) -> StatementResult:
        """Refresh now (a backfill with ``partition``); with ``cascade`` the future completes with the cascade.
        A table on Airflow: a DAG run is triggered (its downstream tables on Airflow follow its Asset). The
        trigger (the runner's, a stale read's) is not part of the statement: its handler's check, then its path."""
        stmt = AlterRefresh(**_named(name), partition=partition)
        if trigger is RefreshTrigger.MANUAL:
            return self.execute(stmt, cascade)
        plan = handler_for(stmt).check_current(self, stmt, cascade)
        return alter.refresh(self, self.workspace.qualify(stmt.name), partition, cascade, trigger, known=plan)

    def drop(self, name: str, if_exists: bool, cascade: bool) -> StatementResult:
        """Check first (refused: nothing changes), then stop the tables' refreshes, then drop them."""
        return self.execute(DropMaterializedTable(**_named(name), if_exists=if_exists), cascade)

    def cancel(self, name: str) -> StatementResult:
        """Cancel the table's running refresh in this process (the card's Cancel); its schedule goes on.

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        if self.manager.cancel(name):
            message = f"Cancelled the running refresh of {name}: nothing was committed; its schedule goes on."
        else:
            message = f"No refresh of {name} is running in this process: nothing to cancel."
        return StatementResult(StatementAction.CANCELLED, (name,), message)

    # --- keeping the manager in step with the catalog (what handlers use: statements.base.Runtime) -----------

    def managed(self, name: str) -> ManagedTable:
        """The manager's record of ``name`` from one load of it (and of each source the manager does not know):
        a statement's cost does not grow with the catalog."""
        info, definition = self.workspace.catalog.load_materialized(name)  # says why: missing, or a plain table
        return managed_table(info, {u for u in definition.upstream if self._is_materialized(u)})

    def _is_materialized(self, name: str) -> bool:
        if self.manager.knows(name):
            return True
        try:
            return self.workspace.catalog.load(name).definition is not None
        except NoSuchMaterializedTableError:
            return False

    def track(self, name: str, with_downstream: bool = False) -> None:
        """Make sure the manager knows ``name`` (and, for a cascade, its downstream tables) from the catalog."""
        wanted = [name]
        if with_downstream:
            from mt_magic.runtime.graph import descendants, lineage

            wanted += descendants(name, lineage(self.workspace).reads)
        for table in wanted:
            if not self.manager.knows(table):
                self.manager.upsert(self.managed(table))

    def retrack(self, name: str) -> None:
        """Hand a changed definition to the manager (a running refresh of the old one starts over)."""
        self.manager.upsert(self.managed(name))

    def drive(self) -> None:
        """Inline manager: run what was just requested (and its cascade) now, on this thread."""
        if not self.background:
            self.manager.step()


def _table_name(name: str) -> TableName:
    return TableName.from_parts(name.split("."))


def _named(name: str) -> dict[str, Any]:
    """The fields of a statement an entry point stands for: the table named, no cell text."""
    return {"text": "", "position": Position(1, 1), "name": _table_name(name)}
