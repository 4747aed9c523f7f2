"""DROP MATERIALIZED TABLE [IF EXISTS] (with the cell's ``--cascade``, the tables reading it too): who would be
dropped is decided first (dependents refuse a drop without CASCADE; each table on Airflow must be reachable), then
the tables' refreshes stop, then each table's Iceberg view and the table go, views first and put back if the table
stays.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mt_magic.errors import (
    DefinitionError,
    DependencyError,
    NoSuchMaterializedTableError,
)
from mt_magic.runtime.graph import descendants
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.statements.base import CellNames, Handler, Runtime, Undo
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.statements import DropMaterializedTable
from mt_magic.vocabulary import StatementAction

if TYPE_CHECKING:
    from mt_magic.catalog.tables import TableInfo
    from mt_magic.scheduling.workflow import WorkflowScheduler

DROP_WAIT_SECONDS = 60.0
"""How long a DROP waits for a cancelled refresh of the table to abort before purging its files."""


@dataclass(frozen=True)
class DropPlan:
    """What a DROP removes, dependents first (empty: ``IF EXISTS`` on a missing table), with each table as the
    listing that found it read it: DROP's check hands this to its apply, which loads none of them again."""

    victims: tuple[str, ...]
    tables: Mapping[str, TableInfo] = field(default_factory=dict)


class Drop(Handler[DropMaterializedTable, DropPlan]):
    """Its plan is what it drops (:func:`check_drop`: one listing of the catalog, the table and its readers)."""

    verb = "DROP"

    def apply(
        self, rt: Runtime, stmt: DropMaterializedTable, cascade: bool, plan: DropPlan | None = None
    ) -> StatementResult:
        return drop(rt, rt.workspace.qualify(stmt.name), stmt.if_exists, cascade, plan)

    def check(
        self, rt: Runtime, stmt: DropMaterializedTable, names: CellNames, where: str, cascade: bool = False
    ) -> DropPlan | None:
        """The plan is handed on only when no statement before this one in the cell changes a table: it lists the
        catalog as it is before the cell, so a reader an earlier CREATE or ALTER … AS adds, or a table an earlier
        statement renames or drops, would be missing from it; then the apply lists the catalog again."""
        name = rt.workspace.qualify(stmt.name)
        if not stmt.if_exists:
            names.require(name, where)
        plan = None
        if names.present(name) and not names.made_here(name):
            dropped_before = {n for n, exists in names.exists.items() if not exists}
            plan = check_drop(rt, name, stmt.if_exists, cascade, dropped_before)
        names.exists[name] = False
        return None if names.changed else plan

    def check_current(self, rt: Runtime, stmt: DropMaterializedTable, cascade: bool) -> DropPlan:
        return check_drop(rt, rt.workspace.qualify(stmt.name), stmt.if_exists, cascade)

    def undo(self, rt: Runtime, stmt: DropMaterializedTable) -> tuple[str, Undo | None]:
        return f"dropped {rt.workspace.qualify(stmt.name)}", None  # its files are purged


def check_drop(
    rt: Runtime, name: str, if_exists: bool, cascade: bool, dropped_before: Collection[str] = ()
) -> DropPlan:
    """DROP's checks before anything changes: what it would drop (:func:`plan_drop`: refused without CASCADE while
    other tables read it, except those ``dropped_before`` in the cell) and, for each of those tables on Airflow,
    Airflow reachable. Returns the plan, read once."""
    plan = plan_drop(rt.workspace, name, if_exists, cascade, dropped_before)
    for victim, scheduler in _elsewhere(rt, plan).items():
        scheduler.check(victim, exists=False)  # a DAG not parsed yet is fine
    return plan


def _elsewhere(rt: Runtime, plan: DropPlan) -> dict[str, WorkflowScheduler]:
    """The plan's tables on another scheduler than this kernel's, from their definitions as the plan read them."""
    if rt.workflows.run_here:
        return {}
    found = {}
    for victim in plan.victims:
        definition = plan.tables[victim].definition
        scheduler = None if definition is None else rt.workflows.external(definition.options)
        if scheduler is not None:
            found[victim] = scheduler
    return found


def drop(rt: Runtime, name: str, if_exists: bool, cascade: bool, plan: DropPlan | None = None) -> StatementResult:
    """Plan (refused: nothing changes), then stop the tables' refreshes, then drop them. ``plan``: its check's
    (:func:`check_drop`), else read here."""
    ws = rt.workspace
    plan = plan or plan_drop(ws, name, if_exists, cascade)
    victims = list(plan.victims)
    if not victims:
        return StatementResult(StatementAction.DROPPED, (), f"{name} does not exist; nothing to drop (IF EXISTS).")
    elsewhere = _elsewhere(rt, plan)
    for victim in victims:
        if rt.manager.knows(victim):
            rt.manager.remove(victim, wait=DROP_WAIT_SECONDS)
    try:
        drop_tables(ws, victims, plan.tables)
    except BaseException:
        # Not atomic: a cascade purges table by table, and a purged table cannot come back. A failure part
        # way (the catalog unreachable) leaves the dependents dropped so far gone; what remains stays managed.
        for victim in victims:
            if ws.catalog.exists(victim):
                rt.manager.upsert(rt.managed(victim))
        raise
    for victim, scheduler in elsewhere.items():
        scheduler.delete(victim)  # Airflow: paused now, gone from the DAGs at the next parse
    return StatementResult(StatementAction.DROPPED, tuple(victims), "Dropped " + ", ".join(victims) + ".")


def plan_drop(
    ws: Workspace, name: str, if_exists: bool, cascade: bool, dropped_before: Collection[str] = ()
) -> DropPlan:
    """What a DROP would remove, dependents first; checks everything and changes nothing. One listing of the catalog
    (each table unchanged since this process read it is not loaded again, ``list_materialized``) is every read.
    ``dropped_before``: tables an earlier statement of the cell drops (they read nothing by then).

    Raises:
        NoSuchMaterializedTableError: no such materialized table (and no ``IF EXISTS``).
        DefinitionError: it is a plain Iceberg table.
        DependencyError: other materialized tables read it and ``cascade`` was not given.
    """
    tables = {
        info.name: info for info in ws.catalog.list_materialized(reuse_unchanged=True) if info.definition is not None
    }
    tables = {table: info for table, info in tables.items() if table not in dropped_before}
    upstream = {table: tuple(info.definition.upstream) for table, info in tables.items() if info.definition}
    if name not in upstream:
        if ws.catalog.exists(name):
            raise DefinitionError(
                f"DROP MATERIALIZED TABLE {name}: it is a plain Iceberg table",
                fix=f'drop it with Spark: spark.sql("DROP TABLE {name}")',
            )
        if if_exists:
            return DropPlan(())
        raise NoSuchMaterializedTableError(
            f"DROP MATERIALIZED TABLE {name}: no such materialized table",
            fix="check the name (SHOW MATERIALIZED TABLES lists them), or write DROP MATERIALIZED TABLE IF EXISTS",
        )
    dependents = descendants(name, upstream)
    if dependents and not cascade:
        raise DependencyError(
            f"DROP MATERIALIZED TABLE {name}: {', '.join(dependents)} read(s) it",
            fix="drop those first, or run the cell as `%%materialized --cascade` to drop them too",
        )
    victims = (*reversed(dependents), name)
    return DropPlan(victims, {victim: tables[victim] for victim in victims})


def drop_tables(ws: Workspace, victims: list[str], read: Mapping[str, TableInfo] | None = None) -> list[str]:
    """Drop (and purge) ``victims`` and their views in order; returns those dropped before any failure re-raises.
    ``read``: the tables as the DROP's plan read them (not loaded again)."""
    dropped: list[str] = []
    for victim in victims:
        iceberg_view.drop_with_view(ws, victim, (read or {}).get(victim))
        dropped.append(victim)
    return dropped
