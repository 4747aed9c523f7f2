"""``DROP MATERIALIZED TABLE [IF EXISTS] name`` (with the cell's ``--cascade``, the tables reading it too)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.runtime.handlers.base import CellNames, Handler, Runtime, Undo
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import drop as drop_statement
from mt_magic.sql.ddl.statements import DropMaterializedTable
from mt_magic.vocabulary import StatementAction

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace

DROP_WAIT_SECONDS = 60.0
"""How long a DROP waits for a cancelled refresh of the table to abort before purging its files."""


class Drop(Handler[DropMaterializedTable]):
    verb = "DROP"

    def apply(self, rt: Runtime, stmt: DropMaterializedTable, cascade: bool) -> StatementResult:
        return drop(rt, rt.workspace.qualify(stmt.name), stmt.if_exists, cascade)

    def check(self, ws: Workspace, stmt: DropMaterializedTable, names: CellNames, where: str) -> None:
        name = ws.qualify(stmt.name)
        if not stmt.if_exists:
            names.require(name, where)
        names.exists[name] = False

    def undo(self, rt: Runtime, stmt: DropMaterializedTable) -> tuple[str, Undo | None]:
        return f"dropped {rt.workspace.qualify(stmt.name)}", None  # its files are purged


def drop(rt: Runtime, name: str, if_exists: bool, cascade: bool) -> StatementResult:
    """Check first (refused: nothing changes), then stop the tables' refreshes, then drop them."""
    ws = rt.workspace
    victims = drop_statement.plan_drop(ws, name, if_exists, cascade)
    if not victims:
        return StatementResult(StatementAction.DROPPED, (), f"{name} does not exist; nothing to drop (IF EXISTS).")
    elsewhere = rt.workflows.checked_for_drop(ws, victims)
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
