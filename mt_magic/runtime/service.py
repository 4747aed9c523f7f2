"""The statements' effects: one method per statement kind, over the lifecycle, the engine and the manager.

With a running :class:`RefreshManager` refreshes happen in the background (the cell returns at once);
without one (tests, scripts) they run inline, in the same order the manager would use.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mt_magic.errors import NoSuchMaterializedTableError
from mt_magic.runtime import ddl as lifecycle
from mt_magic.runtime.refresh.engine import Engine, managed_table
from mt_magic.runtime.spark.jobs import job_group_prefix
from mt_magic.runtime.status import RefreshOutcome, RefreshRequest, RefreshTrigger, TableStatus
from mt_magic.sql.ddl.statements import (
    AlterFreshness,
    AlterQuery,
    AlterRefresh,
    AlterResume,
    AlterSuspend,
    AnyStatement,
    CreateMaterializedTable,
    DropMaterializedTable,
)

if TYPE_CHECKING:
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.sql.ddl.freshness import FreshnessRules


DROP_WAIT_SECONDS = 60.0
"""How long a DROP waits for a cancelled refresh of the table to abort before purging its files."""


@dataclass(frozen=True)
class StatementResult:
    """What a statement did, for display."""

    action: str
    """e.g. "created", "altered", "suspended", "refreshed", "dropped"."""
    tables: tuple[str, ...]
    message: str
    refresh: concurrent.futures.Future[RefreshOutcome] | None = field(default=None, compare=False)
    """The refresh it started, when it started one (already done when run inline)."""


def _done(outcome: RefreshOutcome | BaseException) -> concurrent.futures.Future[RefreshOutcome]:
    future: concurrent.futures.Future[RefreshOutcome] = concurrent.futures.Future()
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
    return future


class MaterializedTables:
    """Executes parsed statements against Spark, the catalog and (when running) the refresh manager."""

    def __init__(self, engine: Engine, manager: RefreshManager | None = None) -> None:
        self.engine = engine
        self.workspace = engine.workspace
        self.manager = manager

    def set_rules(self, rules: FreshnessRules) -> None:
        """Apply new FRESHNESS rules (``%config``) to the statements that follow; existing tables keep theirs."""
        self.workspace = replace(self.workspace, rules=rules)
        self.engine.workspace = self.workspace

    # --- statements -------------------------------------------------------------------------------------
    def execute(self, stmt: AnyStatement, cascade: bool = False) -> StatementResult:
        """Apply one statement. ``cascade`` extends REFRESH and DROP to downstream materialized tables."""
        if isinstance(stmt, CreateMaterializedTable):
            return self.create(stmt)
        name = self.workspace.qualify(stmt.name)
        if isinstance(stmt, DropMaterializedTable):
            return self.drop(name, stmt.if_exists, cascade)
        self.workspace.catalog.load_materialized(name)  # a clear error for unknown names, before anything else
        if isinstance(stmt, AlterSuspend):
            return self.suspend(name)
        if isinstance(stmt, AlterResume):
            return self.resume(name, stmt.options)
        if isinstance(stmt, AlterRefresh):
            return self.refresh(name, stmt.partition, cascade)
        if isinstance(stmt, AlterQuery):
            return self.alter_query(name, stmt.query)
        if isinstance(stmt, AlterFreshness):
            lifecycle.change_freshness(self.workspace, name, stmt.freshness)
            self._reschedule(name)
            return StatementResult("altered", (name,), f"{name}: freshness is now {stmt.freshness}.")
        raise TypeError(f"unknown statement {stmt!r}")

    def create(self, stmt: CreateMaterializedTable) -> StatementResult:
        name = self.workspace.qualify(stmt.name)
        if stmt.or_alter and self.workspace.catalog.exists(name):
            lifecycle.alter_query(self.workspace, name, stmt.query, stmt.columns)
            self._reschedule(name)
            return StatementResult("altered", (name,), f"{name} exists: its query was replaced (CREATE OR ALTER).")
        name, definition = lifecycle.create_table(self.workspace, stmt)
        future = self._first_refresh(name)
        return StatementResult(
            "created", (name,), f"Created {name} ({definition.refresh_mode}, {definition.freshness}); "
            "populating it as its first refresh.", future)

    def alter_query(self, name: str, query: str) -> StatementResult:
        definition = lifecycle.alter_query(self.workspace, name, query)
        self._reschedule(name)
        return StatementResult("altered", (name,), f"{name}: new query (definition version "
                               f"{definition.definition_version}); the next refresh uses it.")

    def suspend(self, name: str) -> StatementResult:
        lifecycle.update_definition(self.workspace, name, suspended=True)
        if self.manager is not None:
            self.manager.suspend(name)
        return StatementResult("suspended", (name,), f"{name} is suspended: no refreshes until RESUME.")

    def resume(self, name: str, options: tuple[tuple[str, str], ...] = ()) -> StatementResult:
        lifecycle.update_definition(self.workspace, name, suspended=False)
        if self.manager is not None:
            self._reschedule(name)
            self.manager.resume(name, options)
        extra = f" with {dict(options)} for this resumption" if options else ""
        return StatementResult("resumed", (name,), f"{name} is resumed{extra}.")

    def refresh(self, name: str, partition: tuple[tuple[str, str], ...] = (), cascade: bool = False,
                ) -> StatementResult:
        if self.manager is not None and cascade:
            future = self._cascade_via_manager(name, partition)
        elif self.manager is not None:
            future = self.manager.refresh_now(name, partition=partition)
        else:
            future = self._refresh_inline(name, RefreshTrigger.MANUAL, partition, cascade)
        where = f" partition {dict(partition)}" if partition else ""
        also = " and its downstream tables" if cascade else ""
        return StatementResult("refreshing", (name,), f"Refreshing {name}{where}{also}.", future)

    def drop(self, name: str, if_exists: bool, cascade: bool) -> StatementResult:
        if self.manager is not None and self.workspace.catalog.exists(name):
            for victim in self._drop_order(name, cascade):
                self.manager.remove(victim)
                self.engine.jobs.wait_finished(job_group_prefix(victim), timeout=DROP_WAIT_SECONDS)
        dropped = lifecycle.drop_table(self.workspace, name, if_exists, cascade)
        if not dropped:
            return StatementResult("dropped", (), f"{name} does not exist; nothing to drop (IF EXISTS).")
        return StatementResult("dropped", tuple(dropped), "Dropped " + ", ".join(dropped) + ".")

    # --- status ---------------------------------------------------------------------------------------
    def status(self, name: str) -> TableStatus:
        if self.manager is None:
            raise NoSuchMaterializedTableError("the refresh manager is not running; no status is tracked.")
        return self.manager.status(name)

    # --- helpers ----------------------------------------------------------------------------------------
    def _drop_order(self, name: str, cascade: bool) -> list[str]:
        if not cascade:
            return [name]
        defs = {i.name: i.definition for i in self.workspace.catalog.list_materialized() if i.definition}
        return [*reversed(lifecycle.downstream_of(defs, name)), name]

    def _managed(self, name: str):  # -> ManagedTable
        infos = self.workspace.catalog.list_materialized()
        names = {i.name for i in infos}
        info = next(i for i in infos if i.name == name)
        return managed_table(info, names)

    def _reschedule(self, name: str) -> None:
        if self.manager is not None:
            self.manager.upsert(self._managed(name))

    def _first_refresh(self, name: str) -> concurrent.futures.Future[RefreshOutcome]:
        if self.manager is not None:
            return self.manager.add(self._managed(name), initial=True)
        future = self._refresh_inline(name, RefreshTrigger.INITIAL, (), False)
        if future.exception() is not None:  # inline creation is all-or-nothing
            self.workspace.catalog.drop(name, purge=True)
            raise future.exception()  # type: ignore[misc]
        return future

    def _cascade_via_manager(self, name: str, partition: tuple[tuple[str, str], ...],
                             ) -> concurrent.futures.Future[RefreshOutcome]:
        """Refresh ``name``, then each downstream table after its upstream committed; one future for it all.

        The future carries ``name``'s outcome and completes only when the whole cascade has, so "backfill
        with cascade, then read the result" works.
        """
        assert self.manager is not None
        manager = self.manager
        defs = {i.name: i.definition for i in self.workspace.catalog.list_materialized() if i.definition}
        order = [name, *lifecycle.downstream_of(defs, name)]
        combined: concurrent.futures.Future[RefreshOutcome] = concurrent.futures.Future()
        first: list[RefreshOutcome] = []

        def start(index: int) -> None:
            if index == len(order):
                combined.set_result(first[0])
                return
            table = order[index]
            part = partition if index == 0 else self._cascaded_partition(table, partition)
            trigger = RefreshTrigger.MANUAL if index == 0 else RefreshTrigger.CASCADE
            manager.refresh_now(table, partition=part, trigger=trigger).add_done_callback(lambda f: finished(index, f))

        def finished(index: int, future: concurrent.futures.Future[RefreshOutcome]) -> None:
            error = future.exception()
            if error is not None:
                combined.set_exception(error)
                return
            if index == 0:
                first.append(future.result())
            start(index + 1)

        start(0)
        return combined

    def _refresh_inline(self, name: str, trigger: RefreshTrigger, partition: tuple[tuple[str, str], ...],
                        cascade: bool) -> concurrent.futures.Future[RefreshOutcome]:
        now = self.workspace.clock()
        try:
            outcome = self.engine.refresh(RefreshRequest(name, trigger, now, partition))
        except Exception as exc:
            return _done(exc)
        if cascade:
            defs = {i.name: i.definition for i in self.workspace.catalog.list_materialized() if i.definition}
            for child in lifecycle.downstream_of(defs, name):
                child_partition = self._cascaded_partition(child, partition)
                self.engine.refresh(RefreshRequest(child, RefreshTrigger.CASCADE, now, child_partition))
        return _done(outcome)

    def _cascaded_partition(self, child: str, partition: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """A backfilled partition carries over to a downstream table partitioned by the same columns."""
        if not partition:
            return ()
        _, definition = self.workspace.catalog.load_materialized(child)
        keys = {k for k, _ in partition}
        return partition if keys <= set(definition.partitioned_by) else ()
