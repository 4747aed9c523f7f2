"""The stall watchdog: a refresh running far past its usual duration is flagged, and one past a hard limit ends.

"Usual" is the median duration of the table's recent successful refreshes (the records the manager keeps in
:attr:`~mt_magic.runtime.manager.tracked.ScheduledTable.recent`, seeded from the catalog's history at discovery).
A run is STALLED past ``max(factor × usual, floor)``: the status carries a :class:`~mt_magic.runtime.status.Stall`
(how long, the usual, Spark's view of its job group), shown on the card, in ``%mt`` and kept in its history row.
Past ``max(limit_factor × usual, limit_floor)`` the manager stops waiting: it cancels the job group, counts a
failure (:class:`RefreshTimeLimitError`, retried on the table's normal backoff), and forgets the run at once —
the worker slot and the lease are free even if the lost job never returns (its late answer is ignored).

Pure decisions (:func:`usual_duration`, :meth:`StallPolicy.health`) plus :func:`watch`, the manager's turn at
them in each scheduling pass (called holding the manager's lock, like the other transitions).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mt_magic.errors import RefreshTimeLimitError
from mt_magic.runtime.status import EventKind, RefreshRecord, Stall
from mt_magic.vocabulary import RefreshKind, RunHealth

if TYPE_CHECKING:
    from mt_magic.runtime.manager.state import Effects, SchedulerState
    from mt_magic.runtime.manager.tracked import RunningJob

RECENT_RUNS = 10
"""Successful refreshes the median is taken over (and read from the catalog's history at discovery)."""


@dataclass(frozen=True)
class StallPolicy:
    """When a running refresh is flagged STALLED and when the manager gives up on it.

    Set with ``%config MaterializedMagics.stall_factor`` (and ``stall_floor_seconds``, ``stall_limit_factor``,
    ``stall_limit_floor_seconds``; next ``%load_ext``).

    Raises:
        ValueError: a factor below 1, a floor not positive, or a limit below the flag.
    """

    factor: float = 4.0
    """Flag a run at this multiple of the table's usual duration…"""
    floor: timedelta = timedelta(seconds=60)
    """…but never before this (a 0.2 s refresh taking 1 s is not stalled)."""
    limit_factor: float = 20.0
    """Cancel a run at this multiple of the usual duration…"""
    limit_floor: timedelta = timedelta(minutes=30)
    """…but never before this; with no measured run yet, these floors alone apply."""

    def __post_init__(self) -> None:
        if self.factor < 1 or self.limit_factor < 1:
            raise ValueError(f"stall factors must be >= 1, got {self.factor} and {self.limit_factor}")
        if self.floor <= timedelta(0):
            raise ValueError(f"the stall floor must be positive, got {self.floor}")
        if self.limit_factor < self.factor or self.limit_floor < self.floor:
            raise ValueError(
                f"the time limit ({self.limit_factor}× usual, floor {self.limit_floor}) must not come before the "
                f"stall flag ({self.factor}× usual, floor {self.floor})"
            )

    def flag_after(self, usual: timedelta | None) -> timedelta:
        return self.floor if usual is None else max(usual * self.factor, self.floor)

    def limit(self, usual: timedelta | None) -> timedelta:
        return self.limit_floor if usual is None else max(usual * self.limit_factor, self.limit_floor)

    def health(self, running_for: timedelta, usual: timedelta | None) -> RunHealth:
        """ON_TIME, STALLED past :meth:`flag_after`, OVER_LIMIT past :meth:`limit`."""
        if running_for >= self.limit(usual):
            return RunHealth.OVER_LIMIT
        if running_for >= self.flag_after(usual):
            return RunHealth.STALLED
        return RunHealth.ON_TIME


def usual_duration(records: Iterable[RefreshRecord], runs: int = RECENT_RUNS) -> timedelta | None:
    """The median duration of the newest ``runs`` successful refreshes that did work (``None``: none yet).

    NOOP runs (nothing changed, no commit) and failed attempts say nothing about how long work takes.
    """
    durations = [r.duration for r in records if r.error is None and r.kind is not RefreshKind.NOOP][:runs]
    return statistics.median_low(durations) if durations else None


@dataclass
class WatchResult:
    """What one watch asks of the manager: the effects of abandoned runs, and whether any run was abandoned."""

    effects: Effects
    abandoned: list[RunningJob] = field(default_factory=list)


def watch(state: SchedulerState, policy: StallPolicy, now: datetime) -> WatchResult:
    """Flag the running refreshes past their stall threshold; abandon those past their limit (holding the lock).

    A newly stalled run publishes STATE_CHANGED with its stall; a run past its limit is cancelled and settled as
    a :class:`RefreshTimeLimitError` failure now, whatever its worker does later.
    """
    from mt_magic.runtime.manager.state import Effects

    result = WatchResult(Effects())
    for job in state.running():
        if job.cancelled:
            continue
        entry = job.table
        usual = usual_duration(entry.recent)
        running_for = now - job.started_at
        health = policy.health(running_for, usual)
        if health is RunHealth.ON_TIME:
            continue
        stall = Stall(running_for, usual, policy.flag_after(usual), policy.limit(usual), job.progress)
        first = job.stall is None
        job.stall = stall
        if health is RunHealth.STALLED:
            if first:
                state.publish(EventKind.STATE_CHANGED, entry, now, f"{RunHealth.STALLED.value}: {_seconds(stall)}")
            continue
        result.effects.absorb(state.abandon(job, time_limit_error(job.request.table, stall), now))
        result.abandoned.append(job)
    return result


def time_limit_error(table: str, stall: Stall) -> RefreshTimeLimitError:
    """The failure of a run the manager gave up on: what ran how long, what Spark did, what to do."""
    spark = stall.spark
    if spark is None:
        doing = "Spark ran no job for it"
    elif spark.running_tasks is not None:
        doing = f"Spark had {spark.running_tasks} task(s) running, {spark.tasks_done}/{spark.tasks_total} done"
    else:
        doing = f"Spark had done {spark.tasks_done}/{spark.tasks_total} tasks"
    return RefreshTimeLimitError(
        f"refresh of {table} ran past its time limit of {stall.limit.total_seconds():.0f} s ({_seconds(stall)}; "
        f"{doing}): its Spark jobs were cancelled and nothing was committed; it retries on its backoff. Fix: find "
        "what it waits on (a lost executor, a blocking source, a hanging UDF), or raise the limit with "
        "%config MaterializedMagics.stall_limit_factor / stall_limit_floor_seconds"
    )


def _seconds(stall: Stall) -> str:
    usual = f"usually {stall.usual.total_seconds():.1f} s" if stall.usual is not None else "no usual duration yet"
    return f"running {stall.running_for.total_seconds():.0f} s, {usual}"
