"""What a statement's handler is: its check before anything changes, its apply, its undo and its verb.

A handler is stateless (one instance per statement type, :data:`mt_magic.runtime.statements.registry.HANDLERS`);
what it works with comes in as a :class:`Runtime` (the service's parts), so a handler never imports the service
above it. What its check reads that its apply needs too (its *plan*: DROP's tables, CREATE's sources and definition,
the table's scheduler for the ALTERs) is returned by the check and handed to the apply by the caller, so it is read
once and the handler keeps no state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from mt_magic.errors import NoSuchMaterializedTableError

if TYPE_CHECKING:
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.runtime.results import StatementResult
    from mt_magic.runtime.status import ManagedTable
    from mt_magic.runtime.workflows import KernelWorkflows, Workflows
    from mt_magic.runtime.workspace import Workspace

S = TypeVar("S")
P = TypeVar("P")

Undo = Callable[[], object]
"""How to take back an applied statement (called when a later statement of its cell fails to apply)."""


def nothing_to_undo() -> None:
    """The undo of a statement that changed nothing a user could tell apart (a look, a refresh)."""


class Runtime(Protocol):
    """The parts of the service a handler works with."""

    manager: RefreshManager
    background: bool
    workflows: Workflows
    kernel: KernelWorkflows

    @property
    def workspace(self) -> Workspace: ...

    def managed(self, name: str) -> ManagedTable:
        """The manager's record of ``name`` from one load of it."""
        ...

    def track(self, name: str, with_downstream: bool = False) -> None:
        """Make sure the manager knows ``name`` (and, for a cascade, its downstream tables)."""
        ...

    def retrack(self, name: str) -> None:
        """Hand a changed definition to the manager."""
        ...

    def drive(self) -> None:
        """Inline manager: run what was just requested now, on this thread."""
        ...

    def show_tables(self, namespace: str | None = None, like: str | None = None) -> StatementResult: ...

    def show_create(self, name: str) -> StatementResult: ...

    def describe(self, name: str) -> StatementResult: ...


class CellNames:
    """Which names exist as a cell's statements so far leave the catalog (each read from the catalog once), which
    of them the cell creates (lower case: not in the catalog yet, so a CREATE reading one is validated only when it
    is applied), which tables the statements so far change (lower case, :meth:`Handler.touched`: a plan read
    from the catalog before they apply may be stale for those), and which of those they may move to another
    scheduler (``moved``: changed by a statement that does not :attr:`~Handler.keeps_scheduler`)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.exists: dict[str, bool] = {}
        self.created: set[str] = set()
        self.changed: set[str] = set()
        self.moved: set[str] = set()

    def present(self, name: str) -> bool:
        if name not in self.exists:
            self.exists[name] = self.ws.catalog.exists(name)
        return self.exists[name]

    def changed_any(self, tables: Iterable[str], cascade: bool, *, scheduler: bool = False) -> bool:
        """Whether a statement before this one in the cell changes one of ``tables`` (``scheduler``: may move it to
        another scheduler); with ``cascade``, whether one changes anything (a cascade reaches beyond the names: DROP
        drops the readers, REFRESH refreshes them)."""
        changed = self.moved if scheduler else self.changed
        if cascade:
            return bool(changed)
        return any(table.lower() in changed for table in tables)

    def after(self, touched: Iterable[str], keeps_scheduler: bool) -> None:
        """Record what a statement of the cell changes (:meth:`Handler.touched`), for the checks of those after it."""
        lowered = {table.lower() for table in touched}
        self.changed |= lowered
        if not keeps_scheduler:
            self.moved |= lowered

    def made_here(self, name: str) -> bool:
        """Whether an earlier statement of the cell creates ``name`` (a CREATE, or a RENAME to it): its checks
        against the catalog and the schedulers ran with that statement."""
        return name.lower() in self.created

    def require(self, name: str, where: str) -> None:
        """Raises:
        NoSuchMaterializedTableError: ``name`` does not exist at this point of the cell."""
        if not self.present(name):
            raise NoSuchMaterializedTableError(
                f"{where}: {name} does not exist, or not at that point of the cell (nothing of the cell was "
                "applied). Fix: check the name (SHOW MATERIALIZED TABLES lists them), or create it earlier in the cell."
            )


class Handler(Generic[S, P]):
    """One statement type's behaviour (``S``: its statement; ``P``: its plan, what its check reads that its apply
    needs, ``None`` for a handler whose apply reads all it needs). The defaults fit an ALTER of one existing table
    that cannot be undone; each handler overrides what differs."""

    verb: str | None = "ALTER"
    """The statement's verb in "<verb> MATERIALIZED TABLE t: t does not exist" (``None``: it names no table)."""

    keeps_scheduler: bool = False
    """The statement leaves the table it changes with the scheduler it had (SUSPEND, RESUME, REFRESH, SET FRESHNESS,
    SET REFRESH_MODE, ALTER … AS): a cell's later statements may use that scheduler as read before (``False``: it may
    move, drop, rename or create the table)."""

    def apply(self, rt: Runtime, stmt: S, cascade: bool, plan: P | None = None) -> StatementResult:
        """Apply the statement, checked before (:meth:`check` in a cell, else :meth:`check_current`): it fails
        only on a race (another process changed the table, Airflow went away), which a cell undoes. ``plan``: what
        that check returned (``None``: the apply reads it itself)."""
        raise NotImplementedError

    def check(self, rt: Runtime, stmt: S, names: CellNames, where: str, cascade: bool = False) -> P | None:
        """Everything knowable before any statement of a cell is applied, with the names as the statements before
        this one leave them (``names``, updated with what this statement does to them); then, for a table that
        exists before the cell, :meth:`check_current`.

        Returns:
            The plan the cell hands to this statement's :meth:`apply`, ``None`` where :meth:`check_current` did not
            run (the table is created earlier in the cell) or a statement before it may have moved the table to
            another scheduler (the plan this default hands on is the table's scheduler; a handler with another
            plan overrides this method).

        Raises:
            MtMagicError: the statement cannot apply; ``where`` names it in the cell.
        """
        name = rt.workspace.qualify(_name(stmt))
        names.require(name, where)
        if names.made_here(name):
            return None
        plan = self.check_current(rt, stmt, cascade)
        return None if names.changed_any([name], cascade, scheduler=True) else plan

    def check_current(self, rt: Runtime, stmt: S, cascade: bool) -> P | None:
        """The checks against the table as the catalog and its scheduler hold it now: here, Airflow reachable for
        a table on Airflow (:meth:`Workflows.check`). All a single statement checks before it applies (the service
        hands what it returns to :meth:`apply`, which checks none of it again).

        Returns:
            The plan, for :meth:`apply` (``None``: none).

        Raises:
            MtMagicError: the statement cannot apply now (nothing was changed).
        """
        rt.workflows.check(rt.workspace, rt.workspace.qualify(_name(stmt)), exists=False)
        return None

    def undo(self, rt: Runtime, stmt: S) -> tuple[str, Undo | None]:
        """(What the statement does, in words; how to take it back — ``None``: it cannot be), read before it is
        applied. An empty text: nothing to say (a look)."""
        return f"changed {rt.workspace.qualify(_name(stmt))}", None

    def touched(self, ws: Workspace, stmt: S) -> list[str]:
        """The tables the statement may have committed to (the kernel's session forgets them afterwards)."""
        return [ws.qualify(_name(stmt))]


def _name(stmt: Any) -> Any:
    """The table a statement names (every statement but SHOW MATERIALIZED TABLES names one)."""
    return stmt.name
