"""The two workflow schedulers behind the statements (FLIP-448's seam, :mod:`mt_magic.scheduling.workflow`).

:class:`KernelWorkflows` is today's behaviour: the RefreshManager of this kernel (or runner) tracks, suspends,
resumes and refreshes the table. :class:`~mt_magic.scheduling.airflow.AirflowWorkflows` hands the table to
Airflow. :class:`Workflows` picks one per table from its definition's ``'scheduler'`` option, and for a CREATE
without one from the default (``%config MaterializedMagics.scheduler``, itself defaulting to the kernel).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mt_magic.errors import MtMagicError, NoSuchMaterializedTableError, WorkflowSchedulerError
from mt_magic.options import SCHEDULER
from mt_magic.runtime.results import StatementResult
from mt_magic.scheduling.airflow import PARSE_FOLLOW_UPS, AirflowWorkflows
from mt_magic.scheduling.airflow_api import AirflowClient, AirflowSettings, DagNotFoundError
from mt_magic.scheduling.airflow_runs import AirflowRunCache, AirflowRunView
from mt_magic.scheduling.dags import dag_id
from mt_magic.scheduling.workflow import (
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
        self.runs = AirflowRunCache(self._airflow_client)
        """Airflow's last run, log link and next run of each table on Airflow, polled in the background."""

    def configure(
        self,
        default: WorkflowSchedulerKind,
        airflow: AirflowSettings | None,
        client: AirflowClient | None = None,
        *,
        parse_follow_ups: Sequence[float] = PARSE_FOLLOW_UPS,
    ) -> None:
        """New settings (``%config``): the next statement uses them (``client``: talk to Airflow through this
        one, e.g. a test's fake; needs ``airflow``; ``parse_follow_ups``: see :data:`PARSE_FOLLOW_UPS`)."""
        self.default, self.airflow_settings = default, airflow
        self._airflow = (
            AirflowWorkflows(airflow, client, parse_follow_ups) if airflow is not None and client is not None else None
        )
        self.runs.forget()

    def close(self) -> None:
        """Stop polling Airflow (the connection closes)."""
        self.runs.close()

    def airflow_run(self, name: str) -> AirflowRunView | None:
        """What Airflow last said of ``name``'s DAG, at once (``None``: not asked yet; being asked now)."""
        return self.runs.get(name)

    def _airflow_client(self) -> AirflowClient:
        return self.airflow().client

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
        named = any(key.lower() == SCHEDULER.key for key in out)
        if not named and self.default is not WorkflowSchedulerKind.KERNEL:
            out[SCHEDULER.key] = self.default.value
        return out

    def external(self, options: Mapping[str, str]) -> WorkflowScheduler | None:
        """The scheduler of a table with these options when it is not the kernel (``None``: the kernel's manager)."""
        kind = scheduler_of(options)
        return self.airflow() if kind is WorkflowSchedulerKind.AIRFLOW else None

    # --- what a statement's handler checks before anything changes (Handler.check) -------------------------

    def check(self, workspace: Workspace, name: str, *, exists: bool = True) -> None:
        """The scheduler of an existing table, when it is not this kernel, can take a statement now. ``exists=False``
        (a change of definition): reachable is enough, the next parse builds a missing DAG.

        Raises:
            WorkflowSchedulerError: that scheduler cannot take the statement now (nothing was changed).
        """
        scheduler = self._scheduler_of(workspace, name)
        if scheduler is not None:
            scheduler.check(name, exists=exists)

    def check_drop(self, workspace: Workspace, names: Sequence[str]) -> None:
        """Each table of a DROP on another scheduler is reachable there (a DAG not parsed yet is fine); a name that
        is no materialized table is left to the DROP's own refusal."""
        for name in names:
            try:
                scheduler = self._scheduler_of(workspace, name)
            except NoSuchMaterializedTableError:
                continue
            if scheduler is not None:
                scheduler.check(name, exists=False)

    def check_move(self, name: str, current: Mapping[str, str], given: Mapping[str, str]) -> None:
        """A move between schedulers (:meth:`moving`) can happen now: Airflow is configured and reachable."""
        if self._move_to(current, given) is not None:
            self.airflow().check(name, exists=False)

    def check_create(self, stmt: CreateMaterializedTable, name: str) -> None:
        """A CREATE's scheduler (its own, or the default), when it is not the kernel, is reachable (the table does
        not exist yet, nor its DAG)."""
        _, scheduler = self.for_create(stmt, name)
        if scheduler is not None:
            scheduler.check(name, exists=False)

    # --- what the statements do (checked before: a failure here is a race, which the cell undoes) -----------

    def _scheduler_of(self, workspace: Workspace, name: str) -> WorkflowScheduler | None:
        if self.run_here:
            return None
        _, definition = workspace.catalog.load_materialized(name)
        return self.external(definition.options)

    def scheduler(self, workspace: Workspace, name: str) -> WorkflowScheduler | None:
        """The scheduler of an existing table about to be changed, when it is not this kernel (``None``: the
        kernel); what Airflow last said of it is forgotten."""
        scheduler = self._scheduler_of(workspace, name)
        if scheduler is not None:
            self.runs.forget(name)
        return scheduler

    @contextmanager
    def changing(self, workspace: Workspace, name: str, scheduler: WorkflowScheduler | None) -> Iterator[None]:
        """Around a statement that changes ``name``'s schedule or query (ALTER … AS, SET FRESHNESS, SET
        REFRESH_MODE, CREATE OR ALTER): its ``scheduler`` (:meth:`scheduler`, or as the statement's check read it)
        is told after the body writes the catalog (Airflow parses the DAG file now, so the DAG's schedule changes
        at once)."""
        yield
        if scheduler is not None:
            scheduler.modify(name)

    @contextmanager
    def renaming(self, workspace: Workspace, name: str, new_name: str) -> Iterator[None]:
        """Around RENAME: on Airflow the old DAG is paused and the file parsed now, so the new DAG id appears
        (and runs, unless suspended) and the old one goes stale."""
        scheduler = self.scheduler(workspace, name)
        yield
        if scheduler is not None:
            scheduler.delete(name)
            _, definition = workspace.catalog.load_materialized(new_name)
            if isinstance(scheduler, AirflowWorkflows):
                scheduler.create(new_name, suspended=definition.suspended)
            else:
                scheduler.create(new_name)

    def for_drop(self, workspace: Workspace, names: list[str]) -> dict[str, WorkflowScheduler]:
        """The tables of a DROP on another scheduler, and their schedulers."""
        found: dict[str, WorkflowScheduler] = {}
        for name in names:
            scheduler = self._scheduler_of(workspace, name)
            if scheduler is not None:
                found[name] = scheduler
        return found

    def _move_to(self, current: Mapping[str, str], given: Mapping[str, str]) -> WorkflowSchedulerKind | None:
        """The scheduler ``given`` moves a table with options ``current`` to (``None``: it stays where it is)."""
        if self.run_here or not any(key.lower() == SCHEDULER.key for key in given):
            return None
        wanted = scheduler_of(given)
        return None if wanted is scheduler_of(current) else wanted

    @contextmanager
    def moving(
        self, kernel: KernelWorkflows, name: str, current: Mapping[str, str], given: Mapping[str, str]
    ) -> Iterator[dict[str, str] | None]:
        """Move ``name`` to the scheduler ``given`` names around the statement's one catalog write (the body);
        :meth:`check_move` checked Airflow before.

        Yields the table's new options (``None``: ``given`` names no other scheduler, nothing moves). A table
        never has two schedulers at once: *to Airflow*, this kernel's manager forgets the table (a running refresh
        is cancelled and waited for), the body writes the catalog, then Airflow is asked to parse the DAG now; *to
        the kernel*, the DAG is paused first, the body writes the catalog, then the manager takes the table and
        Airflow is asked for the parse that drops the DAG. If a step before the write or the write itself fails,
        the old scheduler is put back in charge and the error raised. (The refresh lease keeps a kernel and an
        Airflow task from refreshing at the same time anyway.)

        Raises:
            WorkflowSchedulerError: Airflow not configured (nothing was changed).
        """
        wanted = self._move_to(current, given)
        if wanted is None:
            yield None
            return
        options = {k: v for k, v in current.items() if k.lower() != SCHEDULER.key}
        options[SCHEDULER.key] = wanted.value
        airflow = self.airflow()
        self.runs.forget(name)
        if wanted is WorkflowSchedulerKind.AIRFLOW:
            with _to_airflow(kernel, airflow, name):
                yield options
        else:
            with _to_kernel(kernel, airflow, name):
                yield options

    def for_create(
        self, stmt: CreateMaterializedTable, name: str
    ) -> tuple[CreateMaterializedTable, WorkflowScheduler | None]:
        """The CREATE with the default scheduler written into its WITH, and that scheduler when it is not the
        kernel (:meth:`check_create` checked it before)."""
        from dataclasses import replace

        options = self.with_default(stmt.options_dict)
        if options != stmt.options_dict:
            stmt = replace(stmt, options=tuple(options.items()))
        return stmt, self.external(options)

    def created(
        self, scheduler: WorkflowScheduler, name: str, definition: MaterializedTableDefinition, workspace: Workspace
    ) -> StatementResult:
        """CREATE of a table on another scheduler: it populates the table (no refresh here); the message says when
        its first run comes."""
        scheduler.create(name)  # asks Airflow to parse the DAG file now: the DAG appears and runs
        mode = f"{definition.refresh_mode.value}, {definition.freshness}"
        upstream = [u for u in definition.upstream if self._on_airflow(workspace, u)]
        if not upstream or not isinstance(scheduler, AirflowWorkflows):
            first = "the first run as soon as Airflow's DAG processor has parsed it (asked for now)."
        else:
            first = (
                f"it runs when {' or '.join(upstream)} on Airflow commits a refresh (its Asset), so its first run "
                f"follows {self._next_runs(scheduler, upstream)}, and the table is empty until then. To fill it now: "
                f"ALTER MATERIALIZED TABLE {name} REFRESH."
            )
        return StatementResult(
            StatementAction.CREATED,
            (name,),
            f"Created {name} ({mode}) on Airflow: DAG {dag_id(name)} refreshes it, {first}",
        )

    @staticmethod
    def _on_airflow(workspace: Workspace, table: str) -> bool:
        try:
            _, definition = workspace.catalog.load_materialized(table)
        except MtMagicError:  # a plain source
            return False
        return scheduler_of(definition.options) is WorkflowSchedulerKind.AIRFLOW

    @staticmethod
    def _next_runs(airflow: AirflowWorkflows, upstream: Sequence[str]) -> str:
        """When Airflow next runs each upstream's DAG, as Airflow says (or why it cannot say yet)."""
        said = []
        for table in upstream:
            try:
                when = airflow.client.dag(dag_id(table)).next_run_after
            except WorkflowSchedulerError:
                when = None
            said.append(
                f"the next run of {table}'s DAG (at {when}, per Airflow)"
                if when
                else f"the next refresh of {table} (Airflow names no time for it yet)"
            )
        return " or ".join(said)


MOVE_WAIT_SECONDS = 60.0
"""How long a move to Airflow waits for the kernel's cancelled refresh of the table to stop."""


@contextmanager
def _to_airflow(kernel: KernelWorkflows, airflow: AirflowWorkflows, name: str) -> Iterator[None]:
    """The kernel lets go before the catalog names Airflow; on a failure it takes the table back."""
    manager = kernel.manager
    if manager.knows(name):
        manager.remove(name, reason="moving to Airflow", wait=MOVE_WAIT_SECONDS)
    try:
        yield
    except BaseException:
        manager.upsert(kernel.managed(name))
        kernel.drive()
        raise
    record = kernel.managed(name)
    manager.upsert(record)  # shown on the card, refreshed by Airflow (never armed nor leased here)
    kernel.drive()
    airflow.create(name, suspended=record.suspended)


@contextmanager
def _to_kernel(kernel: KernelWorkflows, airflow: AirflowWorkflows, name: str) -> Iterator[None]:
    """Airflow's DAG is paused before the catalog names the kernel; on a failure it is unpaused again."""
    paused_here = False
    try:
        paused_here = not airflow.client.dag(dag_id(name)).is_paused
    except DagNotFoundError:
        pass
    if paused_here:
        airflow.suspend(name)
    try:
        yield
    except BaseException:
        if paused_here:
            airflow.resume(name)
        raise
    kernel.modify(name)  # the manager adopts the definition that now names it: armed and leased here
    kernel.drive()
    airflow.parse_now(name)  # the DAG leaves Airflow at this parse (it stays paused until then)
