"""A cell is all or nothing: every statement is checked before the first is applied, and when one fails to
apply, the ones applied before it are undone in reverse order.

Each statement's part lives in its handler (:mod:`mt_magic.runtime.statements`): its check, what it did in words,
and how to take it back; this module only runs them in order.

The checks before anything changes, for a cell of several statements (a single statement checks the catalog and
its scheduler first, :meth:`~.statements.base.Handler.check_current`, and its apply reads the rest): each name a
statement changes exists, or does not, as the statements before it leave the catalog (CREATE of a name that exists,
ALTER or DROP of one that does not); each CREATE whose sources all exist already is validated in full, as it would
be when applied (Spark analyses its query, its options and schedule are checked:
:func:`.statements.definition.build_definition`, which writes nothing); and the scheduler of each table the cell
changes can take the statement now (Airflow reachable, for a table on Airflow or a CREATE for it). A CREATE reading
a table created earlier in the cell is validated when it is applied. No apply checks any of this again: one that
fails after all (a race) is undone with the others. What a statement's check read that its apply needs (its plan:
a CREATE's analysed definition, DROP's tables, the scheduler of SUSPEND's, RESUME's and REFRESH's table) goes to its
apply, unless a statement before it in the cell changes what it was read from (for a scheduler: may move the table).

The undo, when a statement fails after others were applied: a created table is dropped, SUSPEND and RESUME are
reversed, SET FRESHNESS and SET REFRESH_MODE go back to the values before, RENAME renames back; a REFRESH needs
none (it changed no definition, and a refresh is never wrong). What cannot be undone — DROP purges the table's
files, ALTER … AS and CREATE OR ALTER recompute (a table's older rows are gone), SET ('scheduler' = …) moves
the table between schedulers — is named in the error, which says what was undone and what was kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mt_magic.errors import CellNotAppliedError, MtMagicError, WorkflowSchedulerError
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements.base import CellNames, Undo
from mt_magic.runtime.statements.registry import handler_for
from mt_magic.sql.ddl.statements import AnyStatement

if TYPE_CHECKING:
    from mt_magic.runtime.service import MaterializedTables


def execute_cell(
    service: MaterializedTables, statements: Sequence[AnyStatement], cascade: bool = False
) -> list[StatementResult]:
    """Apply a cell's statements in order, all or nothing (see the module docstring).

    Raises:
        MtMagicError: a check failed; nothing was applied.
        CellNotAppliedError: statement k failed to apply; the message says which and what was undone.
    """
    checked = len(statements) > 1
    plans = check_cell(service, statements, cascade) if checked else [None] * len(statements)
    results: list[StatementResult] = []
    applied: list[tuple[str, Undo | None]] = []
    for number, (statement, plan) in enumerate(zip(statements, plans, strict=True), 1):
        label, undo = handler_for(statement).undo(service, statement)
        try:
            results.append(service.execute(statement, cascade=cascade, checked=checked, plan=plan))
        except MtMagicError as exc:
            if not applied:
                raise
            raise CellNotAppliedError(_undo_all(exc, number, applied)) from exc
        applied.append((label, undo))
    return results


def check_cell(
    service: MaterializedTables, statements: Sequence[AnyStatement], cascade: bool = False
) -> list[object | None]:
    """Every check that needs nothing applied first, over the whole cell: each statement's handler checks it with
    the names as the statements before it leave them (see the module docstring).

    Returns:
        Each statement's plan, for its apply (:meth:`~.statements.base.Handler.check`; ``None``: its apply reads it).

    Raises:
        MtMagicError: the first statement found wrong, named by its number in the cell.
    """
    names = CellNames(service.workspace)
    plans: list[object | None] = []
    for number, statement in enumerate(statements, 1):
        where = f"Statement {number} of the cell"
        handler = handler_for(statement)
        try:
            plans.append(handler.check(service, statement, names, where, cascade))
        except WorkflowSchedulerError as exc:  # its own message says nothing was changed; it names the statement
            if exc.statement is None:
                exc.statement = where
                exc.args = (exc.message(),)
            raise
        names.after(handler.touched(service.workspace, statement), handler.keeps_scheduler)
    return plans


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
