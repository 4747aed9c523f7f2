"""The two workflow schedulers behind the statements (FLIP-448's seam, :mod:`mt_magic.scheduling.workflow`).

:class:`KernelWorkflows` is today's behaviour: the RefreshManager of this kernel (or runner) tracks, suspends,
resumes and refreshes the table. :class:`~mt_magic.scheduling.airflow.AirflowWorkflows` hands the table to
Airflow. :class:`Workflows` picks one per table from its definition's ``'scheduler'`` option, and for a CREATE
without one from the default (``%config MaterializedMagics.scheduler``, itself defaulting to the kernel).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mt_magic.errors import DefinitionError, WorkflowSchedulerError
from mt_magic.runtime.results import StatementResult
from mt_magic.scheduling.airflow import AirflowWorkflows
from mt_magic.scheduling.airflow_api import AirflowSettings
from mt_magic.scheduling.workflow import (
    SCHEDULER_OPTION,
    Partition,
    WorkflowRun,
    WorkflowScheduler,
    scheduler_of,
)
from mt_magic.vocabulary import RefreshTrigger, StatementAction, WorkflowSchedulerKind

if TYPE_CHECKING:
    from mt_magic.catalog.definitions import MaterializedTableDefinition
    from mt_magic.runtime.manager.refresh_manager import RefreshManager
    from mt_magic.runtime.status import ManagedTable, RefreshOutcome
    from mt_magic.runtime.workspace import Workspace
    from mt_magic.sql.ddl.statements import CreateMaterializedTable


@dataclass(frozen=True)
class KernelRun(WorkflowRun):
    """A refresh the kernel's manager runs: its future completes with the refresh (or the cascade)."""

    future: Future[RefreshOutcome] | None = field(default=None, compare=False)


class KernelWorkflows:
    """The kernel's RefreshManager as a :class:`WorkflowScheduler` (it needs no check: it is this process)."""

    kind = WorkflowSchedulerKind.KERNEL

    def __init__(
        self, manager: RefreshManager, managed: Callable[[str], ManagedTable], drive: Callable[[], None]
    ) -> None:
        self.manager = manager
        self.managed = managed
        self.drive = drive

    def check(self, name: str, *, exists: bool = True) -> None:
        return None

    def create(self, name: str) -> None:
        self.manager.add(self.managed(name), initial=True)
        self.drive()

    def modify(self, name: str) -> None:
        self.manager.upsert(self.managed(name))

    def delete(self, name: str) -> None:
        if self.manager.knows(name):
            self.manager.remove(name)

    def suspend(self, name: str) -> None:
        if not self.manager.knows(name):
            self.manager.upsert(self.managed(name))
        self.manager.suspend(name)

    def resume(self, name: str, options: Partition = ()) -> None:
        self.manager.upsert(self.managed(name))
        self.manager.resume(name, options)
        self.drive()

    def refresh(
        self,
        name: str,
        partition: Partition = (),
        cascade: bool = False,
        trigger: RefreshTrigger = RefreshTrigger.MANUAL,
    ) -> KernelRun:
        if not self.manager.knows(name):
            self.manager.upsert(self.managed(name))
        future = self.manager.refresh_now(name, partition=partition, cascade=cascade, trigger=trigger)
        self.drive()
        return KernelRun(self.kind, "this kernel's refresh manager", future=future)


class Workflows:
    """Which scheduler runs each table; Airflow's client is made on first use from the settings.

    Args:
        default: the scheduler of a CREATE that names none.
        airflow: where Airflow is and how to authenticate (``None``: from ``MT_MAGIC_AIRFLOW_*``).
    """

    def __init__(
        self, default: WorkflowSchedulerKind = WorkflowSchedulerKind.KERNEL, airflow: AirflowSettings | None = None
    ) -> None:
        self.default = default
        self.airflow_settings = airflow
        self._airflow: AirflowWorkflows | None = None
        self.run_here = False
        """This process is the other scheduler's worker (``python -m mt_magic refresh`` in an Airflow task):
        every table is refreshed here, whoever schedules it."""

    def configure(self, default: WorkflowSchedulerKind, airflow: AirflowSettings | None) -> None:
        """New settings (``%config``): the next statement uses them."""
        self.default, self.airflow_settings, self._airflow = default, airflow, None

    def airflow(self) -> AirflowWorkflows:
        """Raises WorkflowSchedulerError: Airflow is not configured (the message says how)."""
        if self._airflow is None:
            settings = self.airflow_settings or AirflowSettings.from_env()
            if settings is None:
                raise WorkflowSchedulerError(
                    "this table is scheduled on Airflow, but no Airflow is configured: set MT_MAGIC_AIRFLOW_URL "
                    "(and MT_MAGIC_AIRFLOW_USERNAME / _PASSWORD or _TOKEN), or %config "
                    "MaterializedMagics.airflow_url; nothing was changed"
                )
            self._airflow = AirflowWorkflows(settings)
        return self._airflow

    def with_default(self, options: Mapping[str, str]) -> dict[str, str]:
        """A CREATE's WITH options with the default scheduler written in when it names none and it is not the
        kernel (the catalog, not this kernel's settings, tells Airflow's DAG file which tables are its own)."""
        out = dict(options)
        named = any(key.lower() == SCHEDULER_OPTION for key in out)
        if not named and self.default is not WorkflowSchedulerKind.KERNEL:
            out[SCHEDULER_OPTION] = self.default.value
        return out

    def external(self, options: Mapping[str, str]) -> WorkflowScheduler | None:
        """The scheduler of a table with these options when it is not the kernel (``None``: the kernel's manager)."""
        kind = scheduler_of(options)
        return self.airflow() if kind is WorkflowSchedulerKind.AIRFLOW else None

    # --- what the service's statements ask (each before the catalog changes) -----------------------------

    def checked(self, workspace: Workspace, name: str) -> WorkflowScheduler | None:
        """The scheduler of an existing table when it is not this kernel, after its check (``None``: the kernel).

        Raises:
            WorkflowSchedulerError: that scheduler cannot take the statement now (nothing was changed).
        """
        if self.run_here:
            return None
        _, definition = workspace.catalog.load_materialized(name)
        scheduler = self.external(definition.options)
        if scheduler is not None:
            scheduler.check(name)
        return scheduler

    def checked_for_drop(self, workspace: Workspace, names: list[str]) -> dict[str, WorkflowScheduler]:
        """The tables of a DROP on another scheduler, each checked reachable (a DAG not parsed yet is fine)."""
        found: dict[str, WorkflowScheduler] = {}
        for name in names:
            _, definition = workspace.catalog.load_materialized(name)
            scheduler = None if self.run_here else self.external(definition.options)
            if scheduler is not None:
                scheduler.check(name, exists=False)
                found[name] = scheduler
        return found

    def refuse_move(self, name: str, given: Mapping[str, str], current: Mapping[str, str]) -> None:
        """CREATE OR ALTER naming another scheduler than the table's: refused (a table never has two schedulers,
        and moving one is not built yet); without ``'scheduler'`` in its WITH the table keeps its own.

        Raises:
            DefinitionError: the WITH names another scheduler (the message says what to do).
        """
        if not any(key.lower() == SCHEDULER_OPTION for key in given):
            return
        wanted, has = scheduler_of(given), scheduler_of(current)
        if wanted is not has:
            raise DefinitionError(
                f"{name} is refreshed by {has.value}; CREATE OR ALTER cannot move it to {wanted.value} (a table has "
                f"one scheduler at a time). DROP it and CREATE it WITH ('{SCHEDULER_OPTION}' = '{wanted.value}'), or "
                "leave 'scheduler' out of the WITH; nothing was changed"
            )

    def for_create(
        self, stmt: CreateMaterializedTable, name: str
    ) -> tuple[CreateMaterializedTable, WorkflowScheduler | None]:
        """The CREATE with the default scheduler written into its WITH, and that scheduler when it is not the
        kernel, checked reachable (the table does not exist yet, nor its DAG)."""
        from dataclasses import replace

        options = self.with_default(stmt.options_dict)
        if options != stmt.options_dict:
            stmt = replace(stmt, options=tuple(options.items()))
        scheduler = self.external(options)
        if scheduler is not None:
            scheduler.check(name, exists=False)
        return stmt, scheduler

    def created(
        self, scheduler: WorkflowScheduler, name: str, definition: MaterializedTableDefinition
    ) -> StatementResult:
        """CREATE of a table on another scheduler: it populates the table (no refresh here)."""
        from mt_magic.scheduling.dags import dag_id

        scheduler.create(name)
        mode = f"{definition.refresh_mode.value}, {definition.freshness}"
        return StatementResult(
            StatementAction.CREATED,
            (name,),
            f"Created {name} ({mode}) on Airflow: DAG {dag_id(name)} refreshes it, the first run as soon as "
            "Airflow's DAG processor parses the catalog again.",
        )
