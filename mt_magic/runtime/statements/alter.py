"""``ALTER MATERIALIZED TABLE``: ``AS <select>``, ``ADD`` / ``DROP CONSTRAINT``, ``SET FRESHNESS``,
``SET REFRESH_MODE``, ``SET ('scheduler' = …)``, ``SUSPEND``, ``RESUME [WITH (…)]`` and
``REFRESH [PARTITION (…)]``: each one's check, apply and undo. What each writes to the catalog is
:mod:`.alter_commit`'s; RENAME TO is :mod:`.rename`'s.

Each writes one catalog commit, tells the table's scheduler (this kernel's manager, or Airflow:
:meth:`~mt_magic.runtime.workflows.Workflows.changing`), then hands the new definition to the manager. The check
reads the table's scheduler once and asks whether it can take the statement (SUSPEND, RESUME and REFRESH act on the
table's DAG, which must be parsed already; a change of definition only needs Airflow reachable, the next parse
builds a missing DAG); that scheduler is the plan the apply tells. In a cell the plan stays good after statements
that change the table but keep its scheduler (``ALTER t SUSPEND; ALTER t RESUME``): only one that may move it
(:attr:`~.base.Handler.keeps_scheduler`) makes the apply read it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from mt_magic.options import SCHEDULER
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import alter_commit as commit
from mt_magic.runtime.statements.base import Handler, Runtime, Undo, nothing_to_undo
from mt_magic.sql.ddl.parser import parse_interval
from mt_magic.sql.ddl.statements import (
    AlterConstraint,
    AlterFreshness,
    AlterQuery,
    AlterRefresh,
    AlterRefreshMode,
    AlterResume,
    AlterScheduler,
    AlterSuspend,
    Freshness,
)
from mt_magic.sql.names import Position
from mt_magic.vocabulary import RefreshMode, RefreshTrigger, StatementAction

if TYPE_CHECKING:
    from mt_magic.scheduling.workflow import WorkflowScheduler

S = TypeVar("S")
C = TypeVar("C", AlterSuspend, AlterResume, AlterRefresh)
Partition = tuple[tuple[str, str], ...]

Scheduled = tuple["WorkflowScheduler | None"]
"""The plan: the table's scheduler other than this kernel (``(None,)``: the kernel), as the check read it
(:func:`checked_scheduler`); a plan of ``None`` means the apply reads it."""


class ScheduledHandler(Handler[S, Scheduled]):
    """An ALTER whose plan is the table's scheduler (see the module)."""

    keeps_scheduler = True

    needs_dag: bool = False
    """On Airflow the statement acts on the table's DAG, which must be parsed already (SUSPEND, RESUME, REFRESH)."""

    def check_current(self, rt: Runtime, stmt: S, cascade: bool) -> Scheduled:
        return checked_scheduler(rt, rt.workspace.qualify(stmt.name), exists=self.needs_dag)  # type: ignore[attr-defined]


def checked_scheduler(rt: Runtime, name: str, exists: bool = True) -> Scheduled:
    """From one load of the definition: the table's scheduler, when not this kernel, can take the statement
    (reachable; with ``exists``, it has the table's DAG). What Airflow last said of the table is forgotten. Returns
    it, the apply's plan."""
    if rt.workflows.run_here:
        return (None,)
    _, definition = rt.workspace.catalog.load_materialized(name)
    scheduler = rt.workflows.external(definition.options)
    if scheduler is not None:
        scheduler.check(name, exists=exists)
        rt.workflows.runs.forget(name)
    return (scheduler,)


def scheduler_of(rt: Runtime, name: str, known: Scheduled | None) -> WorkflowScheduler | None:
    """The scheduler as the check read it (``known``), else read now."""
    return rt.workflows.scheduler(rt.workspace, name) if known is None else known[0]


# --- AS, constraints, SET: a change of definition -------------------------------------------------------------


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
            definition = commit.constrained(rt.workspace, name, stmt.add, stmt.drop)
            commit.alter_query(rt.workspace, commit.AlteredQuery(name, definition, ()))  # a view version with it
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
        altered = commit.altered_query(rt.workspace, name, query, query_position=query_position)
        definition = commit.alter_query(rt.workspace, altered)
    rt.retrack(name)
    return StatementResult(
        StatementAction.ALTERED,
        (name,),
        f"{name}: new query (definition version {definition.definition_version}); the next refresh uses it.",
    )


def set_freshness(rt: Runtime, name: str, freshness: Freshness, known: Scheduled | None = None) -> StatementResult:
    """``ALTER … SET FRESHNESS`` and the card's freshness control: persist, then reschedule (``known``: the
    scheduler as the check read it)."""
    with rt.workflows.changing(rt.workspace, name, scheduler_of(rt, name, known)):
        definition = commit.change_freshness(rt.workspace, name, freshness)
    rt.retrack(name)
    kept = commit.mode_kept(rt.workspace, definition, freshness)
    message = f"{name}: freshness is now {freshness}" + (f"; {kept}." if kept else ".")
    return StatementResult(StatementAction.ALTERED, (name,), message)


def set_refresh_mode(rt: Runtime, name: str, mode: RefreshMode, known: Scheduled | None = None) -> StatementResult:
    """``ALTER … SET REFRESH_MODE``: the new schedule takes over from the last committed refresh state."""
    with rt.workflows.changing(rt.workspace, name, scheduler_of(rt, name, known)):
        definition = commit.change_refresh_mode(rt.workspace, name, mode)
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
            commit.update_definition(rt.workspace, name, options=moved)
    if moved is None:
        return StatementResult(StatementAction.ALTERED, (name,), f"{name} is already refreshed by {scheduler}.")
    rt.retrack(name)
    return StatementResult(StatementAction.ALTERED, (name,), f"{name} is now refreshed by {scheduler}.")


# --- SUSPEND, RESUME, REFRESH: told to the table's scheduler ---------------------------------------------------


class Control(ScheduledHandler[C]):
    """What SUSPEND, RESUME and REFRESH share: they act on the table's scheduler, so on Airflow its DAG must be
    parsed already (:attr:`needs_dag`); their plan is that scheduler."""

    needs_dag = True


class Suspend(Control[AlterSuspend]):
    def apply(self, rt: Runtime, stmt: AlterSuspend, cascade: bool, plan: Scheduled | None = None) -> StatementResult:
        return suspend(rt, rt.workspace.qualify(stmt.name), plan)

    def undo(self, rt: Runtime, stmt: AlterSuspend) -> tuple[str, Undo | None]:
        name = rt.workspace.qualify(stmt.name)
        return f"suspended {name}", lambda: resume(rt, name, ())


class Resume(Control[AlterResume]):
    def apply(self, rt: Runtime, stmt: AlterResume, cascade: bool, plan: Scheduled | None = None) -> StatementResult:
        return resume(rt, rt.workspace.qualify(stmt.name), stmt.options, plan)

    def undo(self, rt: Runtime, stmt: AlterResume) -> tuple[str, Undo | None]:
        name = rt.workspace.qualify(stmt.name)
        return f"resumed {name}", lambda: suspend(rt, name)


class Refresh(Control[AlterRefresh]):
    """No undo needed: a refresh changes no definition, and a refresh is never wrong."""

    def apply(self, rt: Runtime, stmt: AlterRefresh, cascade: bool, plan: Scheduled | None = None) -> StatementResult:
        if stmt.publish_held:
            return publish(rt, rt.workspace.qualify(stmt.name))
        return refresh(rt, rt.workspace.qualify(stmt.name), stmt.partition, cascade, known=plan)

    def check_current(self, rt: Runtime, stmt: AlterRefresh, cascade: bool) -> Scheduled:
        """Also: a backfill's partition keys are partition columns of the table."""
        name = rt.workspace.qualify(stmt.name)
        scheduler = checked_scheduler(rt, name)
        commit.check_partition(rt.workspace, name, stmt.partition)
        return scheduler

    def undo(self, rt: Runtime, stmt: AlterRefresh) -> tuple[str, Undo | None]:
        return f"refreshed {rt.workspace.qualify(stmt.name)}", nothing_to_undo


def publish(rt: Runtime, name: str) -> StatementResult:
    """Publish the refresh held on the audit branch on purpose (its failed expectations accepted)."""
    from mt_magic.runtime.refresh.audit import publish_held

    snapshot = publish_held(rt.workspace.spark, rt.workspace.catalog, name)
    return StatementResult(
        StatementAction.ALTERED, (name,), f"{name}: the held refresh (snapshot {snapshot}) is published to main."
    )


def suspend(rt: Runtime, name: str, known: Scheduled | None = None) -> StatementResult:
    elsewhere = scheduler_of(rt, name, known)
    commit.update_definition(rt.workspace, name, suspended=True)
    rt.kernel.suspend(name)  # every table: on Airflow the card shows it suspended too
    if elsewhere is not None:
        elsewhere.suspend(name)
    return StatementResult(StatementAction.SUSPENDED, (name,), f"{name} is suspended: no refreshes until RESUME.")


def resume(rt: Runtime, name: str, options: Partition = (), known: Scheduled | None = None) -> StatementResult:
    elsewhere = scheduler_of(rt, name, known)
    commit.resume(rt.workspace, name, dict(options))
    rt.kernel.resume(name, options)
    if elsewhere is not None:
        elsewhere.resume(name, options)
    extra = f" with {dict(options)} for this resumption" if options else ""
    return StatementResult(StatementAction.RESUMED, (name,), f"{name} is resumed{extra}.")


def refresh(
    rt: Runtime,
    name: str,
    partition: Partition = (),
    cascade: bool = False,
    trigger: RefreshTrigger = RefreshTrigger.MANUAL,
    known: Scheduled | None = None,
) -> StatementResult:
    """Refresh now (a backfill with ``partition``); with ``cascade`` the future completes with the cascade.
    A table on Airflow: a DAG run is triggered (its downstream tables on Airflow follow its Asset). ``known``: the
    scheduler as the check read it (:func:`checked_scheduler`; ``None``: read here)."""
    elsewhere = scheduler_of(rt, name, known)
    where = f" partition {dict(partition)}" if partition else ""
    if elsewhere is not None:
        run = elsewhere.refresh(name, partition)
        return StatementResult(StatementAction.REFRESHING, (name,), f"Refreshing {name}{where}: {run.description}.")
    rt.track(name, with_downstream=cascade)
    future = rt.kernel.refresh(name, partition, cascade, trigger).future
    also = " and its downstream tables" if cascade else ""
    return StatementResult(StatementAction.REFRESHING, (name,), f"Refreshing {name}{where}{also}.", future)
