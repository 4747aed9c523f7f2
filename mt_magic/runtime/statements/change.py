"""A change decided, not written: the definition ``ALTER … AS``, ``CREATE OR ALTER`` of an existing materialized
table, ``SET FRESHNESS``, ``SET REFRESH_MODE`` or ``RESUME`` would write, from the very functions each statement
writes it with (:mod:`.alter_commit`), checked as the statement checks it. ``%mt explain`` previews it
(``inspect.change_preview``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.runtime.statements.alter_commit import (
    AlteredQuery,
    altered_query,
    created_over,
    freshened,
    remoded,
    resumed,
)
from mt_magic.runtime.statements.registry import CHANGES, Change
from mt_magic.runtime.workspace import Workspace
from mt_magic.sql.ddl.statements import (
    AlterFreshness,
    AlterQuery,
    AlterRefreshMode,
    AlterResume,
    CreateMaterializedTable,
)

ChangeStatement = Change | CreateMaterializedTable
"""The statements a change preview decides (CREATE OR ALTER only of an existing materialized table)."""


def is_change(ws: Workspace, stmt: object) -> bool:
    """Whether ``stmt`` changes an existing materialized table: ALTER … AS, SET FRESHNESS, SET REFRESH_MODE, RESUME,
    or a CREATE OR ALTER of one (of a table that does not exist, or a plain table, it is the CREATE it says)."""
    if isinstance(stmt, CHANGES):
        return True
    if not isinstance(stmt, CreateMaterializedTable) or not stmt.or_alter:
        return False
    name = ws.qualify(stmt.name)
    return ws.catalog.exists(name) and ws.catalog.load(name).definition is not None


@dataclass(frozen=True)
class DecidedChange:
    """A change as its statement decides it (:func:`decided`), not written: what ``%mt explain`` previews."""

    name: str
    label: str
    """The statement as the preview names it, e.g. ``ALTER MATERIALIZED TABLE mt.default.daily AS``."""
    definition: MaterializedTableDefinition
    """The definition the statement would write."""
    notes: tuple[str, ...] = ()
    """What the statement changes that the definition does not show (appended columns, clauses it ignores)."""
    appended: tuple[tuple[str, str], ...] = ()
    """The columns it appends to the table: name and Spark SQL type."""


def decided(ws: Workspace, stmt: ChangeStatement) -> DecidedChange:
    """The definition ``stmt`` would write, decided and checked by the very functions the statement writes it with
    (:func:`altered_query`, :func:`created_over`, :func:`freshened`, :func:`remoded`, :func:`resumed`); nothing is
    written.

    Raises:
        MtMagicError: what the statement would be refused for (the same error, the same Fix).
    """
    name = ws.qualify(stmt.name)
    label = f"ALTER MATERIALIZED TABLE {name}"
    if isinstance(stmt, AlterFreshness):
        return DecidedChange(
            name, f"{label} SET FRESHNESS = {stmt.freshness.sql()}", freshened(ws, name, stmt.freshness)[0]
        )
    if isinstance(stmt, AlterRefreshMode):
        return DecidedChange(name, f"{label} SET REFRESH_MODE = {stmt.mode.value}", remoded(ws, name, stmt.mode))
    if isinstance(stmt, AlterResume):
        return DecidedChange(name, f"{label} RESUME", resumed(ws, name, dict(stmt.options)))
    if isinstance(stmt, AlterQuery):
        altered = altered_query(ws, name, stmt.query, query_position=stmt.query_position)
        return DecidedChange(name, f"{label} AS", altered.definition, _appended(altered), _columns(altered))
    altered = created_over(ws, name, stmt)
    notes = _appended(altered)
    if stmt.freshness is not None or stmt.refresh_mode is not None:
        notes += (
            "CREATE OR ALTER of an existing table keeps its FRESHNESS and REFRESH_MODE (ALTER … SET changes them)",
        )
    return DecidedChange(
        name, f"CREATE OR ALTER MATERIALIZED TABLE {name} AS", altered.definition, notes, _columns(altered)
    )


def _appended(altered: AlteredQuery) -> tuple[str, ...]:
    added = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in altered.added)
    return (f"appends column(s) {added} (nullable)",) if added else ()


def _columns(altered: AlteredQuery) -> tuple[tuple[str, str], ...]:
    return tuple((f.name, f.dataType.simpleString()) for f in altered.added)
