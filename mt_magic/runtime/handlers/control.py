"""``ALTER … SUSPEND``, ``RESUME [WITH (…)]`` and ``REFRESH [PARTITION (…)]``: the table's scheduler (this kernel's
manager, or Airflow) is told after the catalog is written; Airflow is checked before (:meth:`Handler.check_current`:
the table's DAG must be parsed already). The scheduler so read is the check's plan, which the apply tells."""

from __future__ import annotations

from typing import TypeVar

from mt_magic.runtime.handlers.scheduled import Scheduled, ScheduledHandler, checked_scheduler, scheduler_of
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.statements import alter
from mt_magic.runtime.statements.base import Runtime, Undo, nothing_to_undo
from mt_magic.sql.ddl.statements import AlterRefresh, AlterResume, AlterSuspend
from mt_magic.vocabulary import RefreshTrigger, StatementAction

Partition = tuple[tuple[str, str], ...]
S = TypeVar("S", AlterSuspend, AlterResume, AlterRefresh)


class Control(ScheduledHandler[S]):
    """What SUSPEND, RESUME and REFRESH share: they act on the table's scheduler, so on Airflow its DAG must be
    parsed already (:attr:`needs_dag`); their plan is that scheduler (:mod:`.scheduled`)."""

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
        alter.check_partition(rt.workspace, name, stmt.partition)
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
    alter.update_definition(rt.workspace, name, suspended=True)
    rt.kernel.suspend(name)  # every table: on Airflow the card shows it suspended too
    if elsewhere is not None:
        elsewhere.suspend(name)
    return StatementResult(StatementAction.SUSPENDED, (name,), f"{name} is suspended: no refreshes until RESUME.")


def resume(rt: Runtime, name: str, options: Partition = (), known: Scheduled | None = None) -> StatementResult:
    elsewhere = scheduler_of(rt, name, known)
    alter.resume(rt.workspace, name, dict(options))
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
