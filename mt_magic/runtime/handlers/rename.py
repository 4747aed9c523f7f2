"""``ALTER … RENAME TO new_name``: the table, its Iceberg view and its readers' definitions follow
(:mod:`mt_magic.runtime.statements.rename`), then the manager and the cards."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mt_magic.runtime.handlers.base import CellNames, Handler, Runtime, Undo
from mt_magic.runtime.handlers.drop import DROP_WAIT_SECONDS
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements.rename import rename_table
from mt_magic.sql.ddl.statements import AlterRename
from mt_magic.sql.names import TableName
from mt_magic.vocabulary import StatementAction

if TYPE_CHECKING:
    from mt_magic.runtime.workspace import Workspace


class Rename(Handler[AlterRename, None]):
    def apply(self, rt: Runtime, stmt: AlterRename, cascade: bool, plan: None = None) -> StatementResult:
        return rename(rt, *names_of(rt.workspace, stmt))

    def check(self, rt: Runtime, stmt: AlterRename, names: CellNames, where: str, cascade: bool = False) -> None:
        name, new = names_of(rt.workspace, stmt)
        names.require(name, where)
        if not names.made_here(name):
            self.check_current(rt, stmt, cascade)
        names.exists[name] = False
        names.exists[new] = True
        names.created.add(new.lower())

    def undo(self, rt: Runtime, stmt: AlterRename) -> tuple[str, Undo | None]:
        name, new = names_of(rt.workspace, stmt)
        return f"renamed {name} to {new}", lambda: rename(rt, new, name)

    def touched(self, ws: Workspace, stmt: AlterRename) -> list[str]:
        return list(names_of(ws, stmt))


def names_of(ws: Workspace, stmt: AlterRename) -> tuple[str, str]:
    """The table's name and its new one, qualified (an unqualified new name stays in the table's namespace)."""
    name = ws.qualify(stmt.name)
    return name, ws.qualify(stmt.new_name, TableName.from_parts(name.split(".")).namespace)


def rename(rt: Runtime, name: str, new_name: str) -> StatementResult:
    """``ALTER … RENAME TO``: the manager, lineage, the readers' definitions and the cards follow."""
    with rt.workflows.renaming(rt.workspace, name, new_name):
        readers = rename_table(rt.workspace, name, new_name)
    if rt.manager.knows(name):
        rt.manager.remove(name, reason=f"renamed to {new_name}", wait=DROP_WAIT_SECONDS)
    rt.manager.upsert(rt.managed(new_name))
    for reader in readers:
        rt.retrack(reader)
    also = f"; {', '.join(readers)} now read(s) it" if readers else ""
    return StatementResult(StatementAction.RENAMED, (new_name,), f"Renamed {name} to {new_name}{also}.")
