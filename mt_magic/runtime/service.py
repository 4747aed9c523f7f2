"""The only way in: every statement, control, status and view of materialized tables goes through here.

The magics, the widgets' buttons and the headless runner call these methods and nothing below them. Every
refresh goes through the :class:`~mt_magic.runtime.manager.RefreshManager`: with its thread running the
cell returns at once; an *inline* manager (no thread: scripts, tests) runs the same refresh, cascade and
commit path within the call, on the calling thread.

Each statement checks everything that can fail before it changes anything, so a refused statement leaves
the catalog, the manager and the cards as they were.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from mt_magic.errors import NoSuchMaterializedTableError
from mt_magic.options import SCHEDULER
from mt_magic.runtime.inspect.questions import Inspection
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.refresh.engine import Engine, managed_table
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import alter, convert, create, drop
from mt_magic.runtime.statements.rename import rename_table
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
    DescribeMaterializedTable,
    DropMaterializedTable,
    Freshness,
    ShowCreateMaterializedTable,
    ShowMaterializedTables,
)
from mt_magic.sql.names import Position, TableName
from mt_magic.vocabulary import RefreshMode, RefreshTrigger, StatementAction

if TYPE_CHECKING:
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.scheduling.airflow_runs import AirflowRunView
    from mt_magic.sql.ddl.freshness import FreshnessRules

Partition = tuple[tuple[str, str], ...]

DROP_WAIT_SECONDS = 60.0
"""How long a DROP waits for a cancelled refresh of the table to abort before purging its files."""


class MaterializedTables(Inspection):
    """Executes statements and answers questions about materialized tables.

    Args:
        engine: runs refreshes on Spark and reads the catalog.
        manager: every refresh goes through it; ``background=False`` means nobody runs its thread and this
            service drives it inline (each request finishes within the call).
    """

    def __init__(self, engine: Engine, manager: RefreshManager, *, background: bool) -> None:
        self.engine = engine
        self.manager = manager
        self.background = background
        self.workflows = Workflows()
        """Which workflow scheduler runs each table (FLIP-448's seam): this kernel's manager, or Airflow."""
        self.kernel = KernelWorkflows(manager, self._managed, self._drive)
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

    def execute(self, stmt: AnyStatement, cascade: bool = False) -> StatementResult:
        """Apply one statement. ``cascade`` extends REFRESH and DROP to downstream materialized tables.

        One handler per statement type; each resolves nothing itself but the names it is given, and reads the
        table it changes once, first (an unknown name fails there, before anything changes). After a statement
        that may have committed, the kernel's session forgets the tables it names (:mod:`.spark.session_cache`).
        """
        try:
            result = self._execute(stmt, cascade)
        except NoSuchMaterializedTableError as exc:
            raise self._named_table_missing(stmt) or exc from None
        if not isinstance(stmt, (ShowMaterializedTables, ShowCreateMaterializedTable, DescribeMaterializedTable)):
            names = [self.workspace.qualify(stmt.name)]
            if isinstance(stmt, AlterRename):
                names.append(self.workspace.qualify(stmt.new_name, TableName.from_parts(names[0].split(".")).namespace))
            self.engine.session_cache.forget(*names)
        return result

    def _named_table_missing(self, stmt: AnyStatement) -> NoSuchMaterializedTableError | None:
        """The error of a statement naming a table that does not exist, with the statement, a "did you mean" and a
        Fix; ``None`` when the named table exists (the error was about another table)."""
        from mt_magic.runtime.statements.definition import missing_fix

        if isinstance(stmt, ShowMaterializedTables):
            return None
        name = self.workspace.qualify(stmt.name)
        if self.workspace.catalog.exists(name):
            return None
        verb = {
            DropMaterializedTable: "DROP",
            ShowCreateMaterializedTable: "SHOW CREATE",
            DescribeMaterializedTable: "DESCRIBE",
            CreateMaterializedTable: "CREATE OR ALTER",
        }.get(type(stmt), "ALTER")
        skip = " (DROP MATERIALIZED TABLE IF EXISTS skips a missing table.)" if verb == "DROP" else ""
        return NoSuchMaterializedTableError(
            f"{verb} MATERIALIZED TABLE {stmt.name}: {name} does not exist. {missing_fix(self.workspace, name)}{skip}"
        )

    def _execute(self, stmt: AnyStatement, cascade: bool) -> StatementResult:
        match stmt:
            case CreateMaterializedTable():
                return self.create(stmt)
            case ShowMaterializedTables():
                return self.show_tables(stmt.namespace, stmt.like)
        name = self.workspace.qualify(stmt.name)
        match stmt:
            case DropMaterializedTable():
                return self.drop(name, stmt.if_exists, cascade)
            case AlterSuspend():
                return self.suspend(name)
            case AlterResume():
                return self.resume(name, stmt.options)
            case AlterRefresh():
                return self.refresh(name, stmt.partition, cascade)
            case AlterQuery():
                return self.alter_query(name, stmt.query, stmt.query_position)
            case AlterFreshness():
                return self.set_freshness(name, stmt.freshness)
            case AlterRefreshMode():
                return self.set_refresh_mode(name, stmt.mode)
            case AlterScheduler():
                return self.set_scheduler(name, stmt.scheduler)
            case AlterRename():
                own_namespace = TableName.from_parts(name.split(".")).namespace
                return self.rename(name, self.workspace.qualify(stmt.new_name, own_namespace))
            case ShowCreateMaterializedTable():
                return self.show_create(name)
            case DescribeMaterializedTable():
                return self.describe(name)
        raise TypeError(f"unknown statement {stmt!r}")

    def create(self, stmt: CreateMaterializedTable) -> StatementResult:
        name = self.workspace.qualify(stmt.name)
        if stmt.or_alter and self.workspace.catalog.exists(name):
            existing = self.workspace.catalog.load(name)
            if existing.definition is None:  # a plain Iceberg table: converted only when the option asks
                convert.convert_table(self.workspace, stmt, existing)
                return self._populate(name, f"Converted {name} in place (its rows and history stay)")
            with (
                self.workflows.changing(self.workspace, name),
                self.workflows.moving(self.kernel, name, existing.definition.options, stmt.options_dict) as moved,
            ):
                alter.alter_query(
                    self.workspace,
                    name,
                    stmt.query,
                    stmt.columns,
                    stmt.start_mode,
                    stmt.options_dict,
                    query_position=stmt.query_position,
                    options=moved,
                )
            self._retrack(name)
            return StatementResult(
                StatementAction.ALTERED, (name,), f"{name} exists: its query was replaced (CREATE OR ALTER)."
            )
        stmt, elsewhere = self.workflows.for_create(stmt, name)  # Airflow checked before the catalog changes
        name, definition = create.create_table(self.workspace, stmt)
        if elsewhere is not None:
            self.manager.upsert(self._managed(name))  # shown on cards and in %mt; refreshed by its scheduler
            return self.workflows.created(elsewhere, name, definition, self.workspace)
        try:
            future = self.manager.add(self._managed(name), initial=True)
        except BaseException:
            drop.drop_tables(self.workspace, [name])
            raise
        assert future is not None
        self._drive()
        # Inline: all-or-nothing for catalog and manager; subscribers see the table appear, fail and go. With the
        # thread, CREATE returned before the first refresh ended: a failure stays on the card, the table stays.
        if not self.background and future.exception() is not None:
            self.manager.remove(name)
            self._drive()  # delivers the removal to subscribers now, not with the next statement
            drop.drop_tables(self.workspace, [name])
            raise future.exception()  # type: ignore[misc]
        mode = definition.refresh_mode.value
        return StatementResult(
            StatementAction.CREATED,
            (name,),
            f"Created {name} ({mode}, {definition.freshness}); populating it as its first refresh.",
            future,
        )

    def _populate(self, name: str, what: str) -> StatementResult:
        """A converted table joins the manager and its first refresh starts, as after CREATE; a failure of that
        refresh stays on the card (the conversion is not undone: the table's rows and history are the user's)."""
        _, definition = self.workspace.catalog.load_materialized(name)
        future = self.manager.add(self._managed(name), initial=True)
        assert future is not None
        self._drive()
        mode = f"{definition.refresh_mode.value}, {definition.freshness}"
        return StatementResult(
            StatementAction.CREATED, (name,), f"{what} ({mode}); its first refresh runs now.", future
        )

    def alter_query(self, name: str, query: str, query_position: Position | None = None) -> StatementResult:
        with self.workflows.changing(self.workspace, name):
            definition = alter.alter_query(self.workspace, name, query, query_position=query_position)
        self._retrack(name)
        return StatementResult(
            StatementAction.ALTERED,
            (name,),
            f"{name}: new query (definition version {definition.definition_version}); the next refresh uses it.",
        )

    def set_freshness(self, name: str, freshness: Freshness) -> StatementResult:
        """``ALTER … SET FRESHNESS`` and the card's freshness control: persist, then reschedule."""
        with self.workflows.changing(self.workspace, name):
            alter.change_freshness(self.workspace, name, freshness)
        self._retrack(name)
        return StatementResult(StatementAction.ALTERED, (name,), f"{name}: freshness is now {freshness}.")

    def set_refresh_mode(self, name: str, mode: RefreshMode) -> StatementResult:
        """``ALTER … SET REFRESH_MODE``: the new schedule takes over from the last committed refresh state."""
        with self.workflows.changing(self.workspace, name):
            definition = alter.change_refresh_mode(self.workspace, name, mode)
        self._retrack(name)
        schedule = f"cron {definition.cron}" if definition.cron else f"every {definition.freshness}"
        return StatementResult(
            StatementAction.ALTERED, (name,), f"{name}: refresh mode is now {mode.value} ({schedule})."
        )

    def rename(self, name: str, new_name: str) -> StatementResult:
        """``ALTER … RENAME TO``: the manager, lineage, the readers' definitions and the cards follow."""
        with self.workflows.renaming(self.workspace, name, new_name):
            readers = rename_table(self.workspace, name, new_name)
        if self.manager.knows(name):
            self.manager.remove(name, reason=f"renamed to {new_name}", wait=DROP_WAIT_SECONDS)
        self.manager.upsert(self._managed(new_name))
        for reader in readers:
            self._retrack(reader)
        also = f"; {', '.join(readers)} now read(s) it" if readers else ""
        return StatementResult(StatementAction.RENAMED, (new_name,), f"Renamed {name} to {new_name}{also}.")

    def set_scheduler(self, name: str, scheduler: str) -> StatementResult:
        """``ALTER … SET ('scheduler' = …)``: move the table between this kernel's manager and Airflow, never
        with two schedulers at once (:meth:`Workflows.moving`); naming its own scheduler changes nothing."""
        _, definition = self.workspace.catalog.load_materialized(name)
        given = {SCHEDULER.key: scheduler}
        with self.workflows.moving(self.kernel, name, definition.options, given) as moved:
            if moved is not None:
                alter.update_definition(self.workspace, name, options=moved)
        if moved is None:
            return StatementResult(StatementAction.ALTERED, (name,), f"{name} is already refreshed by {scheduler}.")
        self._retrack(name)
        return StatementResult(StatementAction.ALTERED, (name,), f"{name} is now refreshed by {scheduler}.")

    def airflow_run(self, name: str) -> AirflowRunView | None:
        """Airflow's last run, log link and next run of a table on Airflow, as last polled (never waits)."""
        return self.workflows.airflow_run(name)

    def suspend(self, name: str) -> StatementResult:
        elsewhere = self.workflows.checked(self.workspace, name)
        alter.update_definition(self.workspace, name, suspended=True)
        self.kernel.suspend(name)  # every table: on Airflow the card shows it suspended too
        if elsewhere is not None:
            elsewhere.suspend(name)
        return StatementResult(StatementAction.SUSPENDED, (name,), f"{name} is suspended: no refreshes until RESUME.")

    def resume(self, name: str, options: Partition = ()) -> StatementResult:
        elsewhere = self.workflows.checked(self.workspace, name)
        alter.resume(self.workspace, name, dict(options))
        self.kernel.resume(name, options)
        if elsewhere is not None:
            elsewhere.resume(name, options)
        extra = f" with {dict(options)} for this resumption" if options else ""
        return StatementResult(StatementAction.RESUMED, (name,), f"{name} is resumed{extra}.")

    def refresh(
        self,
        name: str,
        partition: Partition = (),
        cascade: bool = False,
        trigger: RefreshTrigger = RefreshTrigger.MANUAL,
    ) -> StatementResult:
        """Refresh now (a backfill with ``partition``); with ``cascade`` the future completes with the cascade.
        A table on Airflow: a DAG run is triggered (its downstream tables on Airflow follow its Asset)."""
        elsewhere = self.workflows.checked(self.workspace, name)
        alter.check_partition(self.workspace, name, partition)
        where = f" partition {dict(partition)}" if partition else ""
        if elsewhere is not None:
            run = elsewhere.refresh(name, partition)
            return StatementResult(StatementAction.REFRESHING, (name,), f"Refreshing {name}{where}: {run.description}.")
        self._track(name, with_downstream=cascade)
        future = self.kernel.refresh(name, partition, cascade, trigger).future
        also = " and its downstream tables" if cascade else ""
        return StatementResult(StatementAction.REFRESHING, (name,), f"Refreshing {name}{where}{also}.", future)

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

    def drop(self, name: str, if_exists: bool, cascade: bool) -> StatementResult:
        """Check first (refused: nothing changes), then stop the tables' refreshes, then drop them."""
        victims = drop.plan_drop(self.workspace, name, if_exists, cascade)
        if not victims:
            return StatementResult(StatementAction.DROPPED, (), f"{name} does not exist; nothing to drop (IF EXISTS).")
        elsewhere = self.workflows.checked_for_drop(self.workspace, victims)
        for victim in victims:
            if self.manager.knows(victim):
                self.manager.remove(victim, wait=DROP_WAIT_SECONDS)
        try:
            drop.drop_tables(self.workspace, victims)
        except BaseException:
            # Not atomic: a cascade purges table by table, and a purged table cannot come back. A failure part
            # way (the catalog unreachable) leaves the dependents dropped so far gone; what remains stays managed.
            for victim in victims:
                if self.workspace.catalog.exists(victim):
                    self.manager.upsert(self._managed(victim))
            raise
        for victim, scheduler in elsewhere.items():
            scheduler.delete(victim)  # Airflow: paused now, gone from the DAGs at the next parse
        return StatementResult(StatementAction.DROPPED, tuple(victims), "Dropped " + ", ".join(victims) + ".")

    # --- keeping the manager in step with the catalog -----------------------------------------------------

    def _managed(self, name: str):  # type: ignore[no-untyped-def]  # -> ManagedTable
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

    def _track(self, name: str, with_downstream: bool = False) -> None:
        """Make sure the manager knows ``name`` (and, for a cascade, its downstream tables) from the catalog."""
        wanted = [name]
        if with_downstream:
            from mt_magic.runtime.graph import descendants, lineage

            wanted += descendants(name, lineage(self.workspace).reads)
        for table in wanted:
            if not self.manager.knows(table):
                self.manager.upsert(self._managed(table))

    def _retrack(self, name: str) -> None:
        """Hand a changed definition to the manager (a running refresh of the old one starts over)."""
        self.manager.upsert(self._managed(name))

    def _drive(self) -> None:
        """Inline manager: run what was just requested (and its cascade) now, on this thread."""
        if not self.background:
            self.manager.step()
