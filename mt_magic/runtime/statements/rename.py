"""``ALTER MATERIALIZED TABLE t RENAME TO u``: the catalog renames the table, and the tables reading it, the manager
and the cards follow.

The catalog's rename keeps the table's data, history, definition and refresh state (it is the same Iceberg
table); its Iceberg view takes the new name's view name and a version pointing at the new name
(``statements.iceberg_view``). Each materialized table that reads it gets its upstream list and queries rewritten to the
new name; if one of those updates fails, the updates made so far, the view's move and the rename are undone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from mt_magic.catalog.tables import TableInfo
from mt_magic.errors import DefinitionError, MaterializedTableExistsError
from mt_magic.runtime.graph import dependents
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import iceberg_view
from mt_magic.runtime.statements.base import CellNames, Handler, Runtime, Undo
from mt_magic.runtime.statements.drop import DROP_WAIT_SECONDS
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.statements import AlterRename
from mt_magic.sql.names import TableName
from mt_magic.sql.query.hidden_keys import visible_query
from mt_magic.sql.query.rewrite import rename_source
from mt_magic.vocabulary import StatementAction


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


def rename_table(ws: Workspace, name: str, new_name: str) -> tuple[str, ...]:
    """Rename ``name`` to ``new_name`` and point its readers at the new name.

    Returns:
        The materialized tables whose definitions now read ``new_name``.

    Raises:
        NoSuchMaterializedTableError: ``name`` is not a materialized table.
        MaterializedTableExistsError: ``new_name`` is taken.
        DefinitionError: the new name is in another catalog or the same as the old one.
    """
    label = f"ALTER MATERIALIZED TABLE {name} RENAME TO {new_name}"
    ws.catalog.load_materialized(name)
    if new_name == name:
        raise DefinitionError(
            f"{label}: the new name is the current one; nothing to rename", fix="write the new name after RENAME TO"
        )
    if ws.catalog.exists(new_name):
        raise MaterializedTableExistsError(
            f"{label}: {new_name} already exists", fix="choose another name, or drop that table first"
        )
    infos = {i.name: i for i in ws.catalog.list_materialized(reuse_unchanged=True) if i.definition}
    upstream = {n: i.definition.upstream for n, i in infos.items() if i.definition}
    readers = [infos[reader] for reader in dependents(name, upstream)]
    iceberg_view.check_free(ws, label, new_name)
    ws.catalog.rename(name, new_name)
    done: list[tuple[TableInfo, Callable[[], None]]] = []
    undo_view: Callable[[], None] = iceberg_view.nothing
    try:
        undo_view = iceberg_view.follow_rename(ws, name, new_name)
        for info in readers:
            done.append((info, _follow(ws, info, name, new_name)))
    except BaseException:
        for info, undo_reader_view in done:  # put back what was already changed, then the view, then the name
            ws.catalog.update_properties(info.name, dict(info.properties))
            undo_reader_view()
        undo_view()
        ws.catalog.rename(new_name, name)
        raise
    return tuple(i.name for i in readers)


def _follow(ws: Workspace, reader: TableInfo, old: str, new: str) -> Callable[[], None]:
    """One reader's definition, reading ``new`` instead of ``old`` (same definition version: same data), and its
    view's new version; returns the undo of the view's part (a failure here undoes it before re-raising)."""
    definition = reader.definition
    assert definition is not None
    expanded = rename_source(definition.expanded_query, old, new)
    upstream = tuple(new if source == old else source for source in definition.upstream)
    starts = {new if source == old else source: snapshot for source, snapshot in definition.start_snapshots.items()}
    shown = visible_query(expanded)  # the user's text has no hidden key columns
    updated = replace(definition, query=shown, expanded_query=expanded, upstream=upstream, start_snapshots=starts)
    undo_view = iceberg_view.redefine(ws, reader.name, updated)
    try:
        ws.catalog.update_properties(reader.name, updated.to_properties())
    except BaseException:
        undo_view()
        raise
    return undo_view
