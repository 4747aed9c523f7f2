"""A cell is all or nothing: every statement is checked before the first is applied, and when one fails to
apply, the ones applied before it are undone in reverse order.

The checks before anything changes, for a cell of several statements (a single statement checks itself first):
each name a statement changes exists, or does not, as the statements before it leave the catalog (CREATE of a
name that exists, ALTER or DROP of one that does not); and each CREATE whose sources all exist already is
validated in full, as it would be when applied (Spark analyses its query, its options and schedule are checked:
:func:`.statements.definition.build_definition`, which writes nothing). A CREATE reading a table created earlier
in the cell is validated when it is applied.

The undo, when a statement fails after others were applied: a created table is dropped, SUSPEND and RESUME are
reversed, SET FRESHNESS and SET REFRESH_MODE go back to the values before, RENAME renames back; a REFRESH needs
none (it changed no definition, and a refresh is never wrong). What cannot be undone — DROP purges the table's
files, ALTER … AS and CREATE OR ALTER recompute (a table's older rows are gone), SET ('scheduler' = …) moves
the table between schedulers — is named in the error, which says what was undone and what was kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mt_magic.errors import (
    CellNotAppliedError,
    MaterializedTableExistsError,
    MtMagicError,
    NoSuchMaterializedTableError,
)
from mt_magic.runtime.results import StatementResult
from mt_magic.sql.ddl.parser import parse_interval
from mt_magic.sql.ddl.statements import (
    AlterFreshness,
    AlterRefresh,
    AlterRefreshMode,
    AlterRename,
    AlterResume,
    AlterSuspend,
    AnyStatement,
    CreateMaterializedTable,
    DescribeMaterializedTable,
    DropMaterializedTable,
    ShowCreateMaterializedTable,
    ShowMaterializedTables,
)
from mt_magic.sql.names import TableName

if TYPE_CHECKING:
    from mt_magic.runtime.service import MaterializedTables

Undo = Callable[[], object]


def execute_cell(
    service: MaterializedTables, statements: Sequence[AnyStatement], cascade: bool = False
) -> list[StatementResult]:
    """Apply a cell's statements in order, all or nothing (see the module docstring).

    Raises:
        MtMagicError: a check failed; nothing was applied.
        CellNotAppliedError: statement k failed to apply; the message says which and what was undone.
    """
    if len(statements) > 1:
        check_cell(service, statements)
    results: list[StatementResult] = []
    applied: list[tuple[str, Undo | None]] = []
    for number, statement in enumerate(statements, 1):
        label, undo = _undo_of(service, statement)
        try:
            results.append(service.execute(statement, cascade=cascade))
        except MtMagicError as exc:
            if not applied:
                raise
            raise CellNotAppliedError(_undo_all(exc, number, applied)) from exc
        applied.append((label, undo))
    return results


def check_cell(service: MaterializedTables, statements: Sequence[AnyStatement]) -> None:
    """Every check that needs nothing applied first, over the whole cell (see the module docstring).

    Raises:
        MtMagicError: the first statement found wrong, named by its number in the cell.
    """
    from mt_magic.runtime.statements.definition import build_definition

    ws = service.workspace
    exists: dict[str, bool] = {}
    created: set[str] = set()  # by statements before, so not in the catalog yet

    def present(name: str) -> bool:
        if name not in exists:
            exists[name] = ws.catalog.exists(name)
        return exists[name]

    for number, statement in enumerate(statements, 1):
        where = f"Statement {number} of the cell"
        if isinstance(statement, ShowMaterializedTables):
            continue
        name = ws.qualify(statement.name)
        if isinstance(statement, CreateMaterializedTable):
            if present(name) and not statement.or_alter:
                raise MaterializedTableExistsError(
                    f"{where} (CREATE MATERIALIZED TABLE {statement.name}): {name} already exists (nothing of the "
                    "cell was applied). Fix: use CREATE OR ALTER MATERIALIZED TABLE to change its query, or DROP it "
                    "first."
                )
            if not present(name) and not _reads_any(ws, statement, created):
                build_definition(ws, statement)
            if not present(name):
                created.add(name.lower())
            exists[name] = True
            continue
        if isinstance(statement, DropMaterializedTable) and statement.if_exists:
            exists[name] = False
            continue
        if not present(name):
            raise NoSuchMaterializedTableError(
                f"{where}: {name} does not exist, or not at that point of the cell (nothing of the cell was "
                "applied). Fix: check the name (SHOW MATERIALIZED TABLES lists them), or create it earlier in the cell."
            )
        if isinstance(statement, DropMaterializedTable):
            exists[name] = False
        elif isinstance(statement, AlterRename):
            exists[name] = False
            new = ws.qualify(statement.new_name, TableName.from_parts(name.split(".")).namespace)
            exists[new] = True
            created.add(new.lower())


def _reads_any(ws, statement: CreateMaterializedTable, names: set[str]) -> bool:  # type: ignore[no-untyped-def]
    """Whether the CREATE's query reads one of ``names`` (lower case: tables the cell creates before it)."""
    if not names:
        return False
    from mt_magic.runtime.statements.definition import qualified_sources

    try:
        _, upstream = qualified_sources(ws, "", statement.query)
    except MtMagicError:
        return False  # refused when it is validated, with its position
    return any(source.lower() in names for source in upstream)


def _undo_of(service: MaterializedTables, statement: AnyStatement) -> tuple[str, Undo | None]:
    """(what the statement does, in words; how to take it back — ``None``: it cannot be), read before it runs."""
    if isinstance(statement, (ShowMaterializedTables, ShowCreateMaterializedTable, DescribeMaterializedTable)):
        return "", lambda: None
    ws = service.workspace
    name = ws.qualify(statement.name)
    if isinstance(statement, AlterRefresh):
        return f"refreshed {name}", lambda: None
    if isinstance(statement, CreateMaterializedTable):
        if statement.or_alter and ws.catalog.exists(name):
            return f"replaced the query of {name}", None
        return f"created {name}", lambda: service.drop(name, True, False)
    if isinstance(statement, AlterSuspend):
        return f"suspended {name}", lambda: service.resume(name, ())
    if isinstance(statement, AlterResume):
        return f"resumed {name}", lambda: service.suspend(name)
    if isinstance(statement, (AlterFreshness, AlterRefreshMode)):
        _, definition = ws.catalog.load_materialized(name)
        if isinstance(statement, AlterFreshness):
            freshness = parse_interval(definition.freshness)
            return f"set the freshness of {name}", lambda: service.set_freshness(name, freshness)
        mode = definition.declared_refresh_mode or definition.refresh_mode
        return f"set the refresh mode of {name}", lambda: service.set_refresh_mode(name, mode)
    if isinstance(statement, AlterRename):
        new = ws.qualify(statement.new_name, TableName.from_parts(name.split(".")).namespace)
        return f"renamed {name} to {new}", lambda: service.rename(new, name)
    if isinstance(statement, DropMaterializedTable):
        return f"dropped {name}", None
    return f"changed {name}", None


def _undo_all(failure: MtMagicError, number: int, applied: list[tuple[str, Undo | None]]) -> str:
    """Undo ``applied`` in reverse order; the message of the cell's failure."""
    undone, kept = [], []
    for label, undo in reversed(applied):
        if not label:
            continue
        if undo is None:
            kept.append(label)
            continue
        try:
            undo()
            undone.append(label)
        except MtMagicError as exc:
            kept.append(f"{label} (its undo failed: {exc})")
    parts = [f"Statement {number} of the cell failed: {failure}"]
    if undone:
        parts.append(f"Undone, so the cell changed nothing: {'; '.join(undone)}.")
    if kept:
        parts.append(f"Kept, as they cannot be undone: {'; '.join(kept)}.")
    return "\n".join(parts)
