"""The ALTERs that change a definition: ``AS <select>``, ``SET FRESHNESS``, ``SET REFRESH_MODE`` and
``SET ('scheduler' = …)``. Each writes one catalog commit (Airflow was checked before:
:meth:`~mt_magic.runtime.handlers.base.Handler.check_current`), tells the table's scheduler
(:meth:`~mt_magic.runtime.workflows.Workflows.changing`), then hands the new definition to the manager."""

from __future__ import annotations

from mt_magic.options import SCHEDULER
from mt_magic.runtime.handlers.scheduled import Scheduled, ScheduledHandler, scheduler_of
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import alter
from mt_magic.runtime.statements.base import Handler, Runtime, Undo
from mt_magic.sql.ddl.parser import parse_interval
from mt_magic.sql.ddl.statements import (
    AlterConstraint,
    AlterFreshness,
    AlterQuery,
    AlterRefreshMode,
    AlterScheduler,
    Freshness,
)
from mt_magic.sql.names import Position
from mt_magic.vocabulary import RefreshMode, StatementAction


class AlterAs(ScheduledHandler[AlterQuery]):
    """``ALTER … AS``: no undo (the next refresh recomputes; the table's older rows are gone)."""

    def apply(self, rt: Runtime, stmt: AlterQuery, cascade: bool, plan: Scheduled | None = None) -> StatementResult:
        return alter_query(rt, rt.workspace.qualify(stmt.name), stmt.query, stmt.query_position, plan)


class ChangeConstraint(ScheduledHandler[AlterConstraint]):
    """``ALTER … ADD CONSTRAINT … EXPECT`` / ``DROP CONSTRAINT``: no undo (the next refresh recomputes)."""

    def apply(
        self, rt: Runtime, stmt: AlterConstraint, cascade: bool, plan: Scheduled | None = None
    ) -> StatementResult:
        name = rt.workspace.qualify(stmt.name)
        with rt.workflows.changing(rt.workspace, name, scheduler_of(rt, name, plan)):
            definition = alter.constrained(rt.workspace, name, stmt.add, stmt.drop)
            alter.alter_query(rt.workspace, alter.AlteredQuery(name, definition, ()))  # a view version with it
        rt.retrack(name)
        what = f"expectation {stmt.add.name} added" if stmt.add is not None else f"expectation {stmt.drop} dropped"
        return StatementResult(
            StatementAction.ALTERED,
            (name,),
            f"{name}: {what} (definition version {definition.definition_version}); the next refresh uses it.",
        )


class SetFreshness(ScheduledHandler[AlterFreshness]):
    def apply(self, rt: Runtime, stmt: AlterFreshness, cascade: bool, plan: Scheduled | None = None) -> StatementResult:
        return set_freshness(rt, rt.workspace.qualify(stmt.name), stmt.freshness, plan)

    def undo(self, rt: Runtime, stmt: AlterFreshness) -> tuple[str, Undo | None]:
        name = rt.workspace.qualify(stmt.name)
        _, definition = rt.workspace.catalog.load_materialized(name)
        freshness = parse_interval(definition.freshness)
        return f"set the freshness of {name}", lambda: set_freshness(rt, name, freshness)


class SetRefreshMode(ScheduledHandler[AlterRefreshMode]):
    def apply(
        self, rt: Runtime, stmt: AlterRefreshMode, cascade: bool, plan: Scheduled | None = None
    ) -> StatementResult:
        return set_refresh_mode(rt, rt.workspace.qualify(stmt.name), stmt.mode, plan)

    def undo(self, rt: Runtime, stmt: AlterRefreshMode) -> tuple[str, Undo | None]:
        name = rt.workspace.qualify(stmt.name)
        _, definition = rt.workspace.catalog.load_materialized(name)
        mode = definition.declared_refresh_mode or definition.refresh_mode
        return f"set the refresh mode of {name}", lambda: set_refresh_mode(rt, name, mode)


class SetScheduler(Handler[AlterScheduler, None]):
    """``SET ('scheduler' = …)``: no undo (the table moved between schedulers)."""

    def apply(self, rt: Runtime, stmt: AlterScheduler, cascade: bool, plan: None = None) -> StatementResult:
        return set_scheduler(rt, rt.workspace.qualify(stmt.name), stmt.scheduler)

    def check_current(self, rt: Runtime, stmt: AlterScheduler, cascade: bool) -> None:
        check_scheduler_move(rt, rt.workspace.qualify(stmt.name), stmt.scheduler)


def check_scheduler_move(rt: Runtime, name: str, scheduler: str) -> None:
    """A move to ``scheduler`` can happen now: Airflow configured and reachable (:meth:`Workflows.check_move`)."""
    _, definition = rt.workspace.catalog.load_materialized(name)
    rt.workflows.check_move(name, definition.options, {SCHEDULER.key: scheduler})


def alter_query(
    rt: Runtime, name: str, query: str, query_position: Position | None = None, known: Scheduled | None = None
) -> StatementResult:
    with rt.workflows.changing(rt.workspace, name, scheduler_of(rt, name, known)):
        altered = alter.altered_query(rt.workspace, name, query, query_position=query_position)
        definition = alter.alter_query(rt.workspace, altered)
    rt.retrack(name)
    return StatementResult(
        StatementAction.ALTERED,
        (name,),
        f"{name}: new query (definition version {definition.definition_version}); the next refresh uses it.",
    )


def set_freshness(rt: Runtime, name: str, freshness: Freshness, known: Scheduled | None = None) -> StatementResult:
    """``ALTER … SET FRESHNESS`` and the card's freshness control: persist, then reschedule (``known``: the
    scheduler as the check read it, :mod:`.scheduled`)."""
    with rt.workflows.changing(rt.workspace, name, scheduler_of(rt, name, known)):
        definition = alter.change_freshness(rt.workspace, name, freshness)
    rt.retrack(name)
    kept = alter.mode_kept(rt.workspace, definition, freshness)
    message = f"{name}: freshness is now {freshness}" + (f"; {kept}." if kept else ".")
    return StatementResult(StatementAction.ALTERED, (name,), message)


def set_refresh_mode(rt: Runtime, name: str, mode: RefreshMode, known: Scheduled | None = None) -> StatementResult:
    """``ALTER … SET REFRESH_MODE``: the new schedule takes over from the last committed refresh state."""
    with rt.workflows.changing(rt.workspace, name, scheduler_of(rt, name, known)):
        definition = alter.change_refresh_mode(rt.workspace, name, mode)
    rt.retrack(name)
    schedule = f"cron {definition.cron}" if definition.cron else f"every {definition.freshness}"
    return StatementResult(StatementAction.ALTERED, (name,), f"{name}: refresh mode is now {mode.value} ({schedule}).")


def set_scheduler(rt: Runtime, name: str, scheduler: str) -> StatementResult:
    """``ALTER … SET ('scheduler' = …)``: move the table between this kernel's manager and Airflow, never
    with two schedulers at once (:meth:`Workflows.moving`); naming its own scheduler changes nothing."""
    _, definition = rt.workspace.catalog.load_materialized(name)
    given = {SCHEDULER.key: scheduler}
    with rt.workflows.moving(rt.kernel, name, definition.options, given) as moved:
        if moved is not None:
            alter.update_definition(rt.workspace, name, options=moved)
    if moved is None:
        return StatementResult(StatementAction.ALTERED, (name,), f"{name} is already refreshed by {scheduler}.")
    rt.retrack(name)
    return StatementResult(StatementAction.ALTERED, (name,), f"{name} is now refreshed by {scheduler}.")
