"""``DROP MATERIALIZED TABLE [IF EXISTS] name`` (with the cell's ``--cascade``, the tables reading it too)."""

from __future__ import annotations

from mt_magic.runtime.handlers.base import CellNames, Handler, Runtime, Undo
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import drop as drop_statement
from mt_magic.sql.ddl.statements import DropMaterializedTable
from mt_magic.vocabulary import StatementAction

DROP_WAIT_SECONDS = 60.0
"""How long a DROP waits for a cancelled refresh of the table to abort before purging its files."""


class Drop(Handler[DropMaterializedTable]):
    verb = "DROP"

    def apply(self, rt: Runtime, stmt: DropMaterializedTable, cascade: bool) -> StatementResult:
        return drop(rt, rt.workspace.qualify(stmt.name), stmt.if_exists, cascade)

    def check(
        self, rt: Runtime, stmt: DropMaterializedTable, names: CellNames, where: str, cascade: bool = False
    ) -> None:
        name = rt.workspace.qualify(stmt.name)
        if not stmt.if_exists:
            names.require(name, where)
        if names.present(name) and not names.made_here(name):
            self.check_current(rt, stmt, cascade)
        names.exists[name] = False

    def check_current(self, rt: Runtime, stmt: DropMaterializedTable, cascade: bool) -> None:
        check_drop(rt, rt.workspace.qualify(stmt.name), stmt.if_exists, cascade)

    def undo(self, rt: Runtime, stmt: DropMaterializedTable) -> tuple[str, Undo | None]:
        return f"dropped {rt.workspace.qualify(stmt.name)}", None  # its files are purged


def check_drop(rt: Runtime, name: str, if_exists: bool, cascade: bool) -> None:
    """DROP's checks against other schedulers before anything changes: each table it would drop that is on
    Airflow is reachable there (with ``cascade``, the tables reading it too: :func:`plan_drop` finds them)."""
    ws = rt.workspace
    victims = drop_statement.plan_drop(ws, name, if_exists, cascade) if cascade else [name]
    rt.workflows.check_drop(ws, victims)


def drop(rt: Runtime, name: str, if_exists: bool, cascade: bool) -> StatementResult:
    """Plan (refused: nothing changes), then stop the tables' refreshes, then drop them."""
    ws = rt.workspace
    victims = drop_statement.plan_drop(ws, name, if_exists, cascade)
    if not victims:
        return StatementResult(StatementAction.DROPPED, (), f"{name} does not exist; nothing to drop (IF EXISTS).")
    elsewhere = rt.workflows.for_drop(ws, victims)
    for victim in victims:
        if rt.manager.knows(victim):
            rt.manager.remove(victim, wait=DROP_WAIT_SECONDS)
    try:
        drop_statement.drop_tables(ws, victims)
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
