"""The workflow-scheduler seam (Flink's FLIP-448 ``WorkflowScheduler``), and which scheduler a table has.

FLIP-448 gives a materialized table's scheduler three calls — create, modify and delete its refresh workflow —
driven by CREATE, ALTER and DROP. mt_magic's statements also suspend, resume and refresh (or backfill) at once,
so the protocol has those too. Every statement asks :meth:`WorkflowScheduler.check` *before* it writes the
catalog, so a scheduler that cannot take the change (Airflow unreachable, a wrong token, a DAG not parsed yet)
refuses the statement and nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from mt_magic.errors import DefinitionError
from mt_magic.options import SCHEDULER
from mt_magic.vocabulary import WorkflowSchedulerKind

Partition = tuple[tuple[str, str], ...]


def parse_scheduler(value: str, where: str | None = None) -> WorkflowSchedulerKind:
    """The scheduler a text names, case-insensitively (``where``: a setting's name, e.g.
    ``MaterializedMagics.scheduler``; by default the WITH option, :data:`mt_magic.options.SCHEDULER`).

    Raises:
        DefinitionError: not one of the known schedulers (the registry's message and Fix list them).
    """
    problem = SCHEDULER.check(value)
    if problem is not None:
        said = problem.describe() if where is None else f"{where} = '{value}' {problem.problem}"
        raise DefinitionError(said, fix=problem.fix, did_you_mean=problem.did_you_mean)
    return WorkflowSchedulerKind(value.strip().lower())


def scheduler_of(options: Mapping[str, str]) -> WorkflowSchedulerKind:
    """The scheduler a definition's WITH options ask for (absent: the kernel's RefreshManager)."""
    value = SCHEDULER.raw(options)
    return WorkflowSchedulerKind.KERNEL if value is None else parse_scheduler(value)


@dataclass(frozen=True)
class WorkflowRun:
    """What a scheduler started for a REFRESH: where to follow it."""

    scheduler: WorkflowSchedulerKind
    description: str
    """For the statement's message, e.g. "Airflow run manual__2026-… of DAG mt__default__t1"."""
    run_id: str = ""


class WorkflowScheduler(Protocol):
    """One table's refresh workflow on one scheduler (FLIP-448's create / modify / delete, plus controls).

    Each method takes the table's qualified name (``catalog.namespace.table``). ``check`` runs before the
    statement writes the catalog; the others after, and they must not fail for reasons ``check`` could see.
    """

    kind: WorkflowSchedulerKind

    def check(self, name: str, *, exists: bool = True) -> None:
        """Refuse the statement now if this scheduler cannot take it (``exists``: the workflow should be there).

        Raises:
            WorkflowSchedulerError: unreachable, refused credentials, or the table's workflow is not there.
        """
        ...

    def create(self, name: str) -> None:
        """Start scheduling a new table (CREATE, or a table moved to this scheduler)."""
        ...

    def modify(self, name: str) -> None:
        """The table's definition changed (ALTER … AS, SET FRESHNESS, SET REFRESH_MODE, RENAME's new name)."""
        ...

    def delete(self, name: str) -> None:
        """Stop scheduling the table (DROP, RENAME's old name, a table moved to another scheduler)."""
        ...

    def suspend(self, name: str) -> None: ...

    def resume(self, name: str, options: Partition = ()) -> None: ...

    def refresh(self, name: str, partition: Partition = ()) -> WorkflowRun:
        """Refresh now, the whole table or one partition (a backfill)."""
        ...
