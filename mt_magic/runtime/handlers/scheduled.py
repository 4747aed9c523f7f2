"""The plan of a statement on an existing table that its scheduler is told of: the scheduler, read once.

SUSPEND, RESUME and REFRESH act on the table's scheduler (on Airflow its DAG must be parsed already); ALTER … AS,
SET FRESHNESS and SET REFRESH_MODE change what it schedules (Airflow reachable is enough: the next parse builds a
missing DAG). Each one's check reads the definition once for the scheduler, asks that scheduler whether it can take
the statement, and returns it as the plan; the apply tells it after the catalog is written. In a cell the plan stays
good after statements that change the table but keep its scheduler (``ALTER t SUSPEND; ALTER t RESUME``): only one
that may move it (:attr:`Handler.keeps_scheduler`, :attr:`CellNames.moved`) makes the apply read it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from mt_magic.runtime.statements.base import Handler, Runtime

if TYPE_CHECKING:
    from mt_magic.scheduling.workflow import WorkflowScheduler

S = TypeVar("S")

Scheduled = tuple["WorkflowScheduler | None"]
"""The plan: the table's scheduler other than this kernel (``(None,)``: the kernel), as the check read it
(:func:`checked_scheduler`); a plan of ``None`` means the apply reads it."""


class ScheduledHandler(Handler[S, Scheduled]):
    """A handler whose plan is the table's scheduler (see the module)."""

    keeps_scheduler = True

    needs_dag: bool = False
    """On Airflow the statement acts on the table's DAG, which must be parsed already (SUSPEND, RESUME, REFRESH);
    a change of definition only needs Airflow reachable (the next parse builds a missing DAG)."""

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
