"""One table as the RefreshManager tracks it: its pending runs, its running job, its failures.

These objects are mutable and belong to the manager: they are only touched while holding its lock, and
leave it only as immutable :class:`~mt_magic.runtime.status.TableStatus` snapshots.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from mt_magic.errors import InvalidTableError, NoSuchSourceTableError
from mt_magic.runtime.manager.schedule import RetryPolicy, schedule_for
from mt_magic.runtime.refresh.audit import ExpectationsHeldError
from mt_magic.runtime.status import (
    HeldRefresh,
    JobProgress,
    ManagedTable,
    MissingSource,
    RefreshOutcome,
    RefreshRecord,
    RefreshRequest,
    Stall,
    TableStatus,
)
from mt_magic.vocabulary import JobState, RefreshKind, RefreshTrigger, WorkflowSchedulerKind

Partition = tuple[tuple[str, str], ...]

CONFLICT_RETRY = timedelta(seconds=1)
"""Base delay before a refresh that lost an optimistic-concurrency race runs again (times the conflicts in a row,
capped at 5, with jitter): the next attempt starts from the new state, so waiting longer gains nothing."""
MAX_CONFLICTS_IN_A_ROW = 10
"""Beyond this many conflicts in a row a conflict counts as a failure (backoff, then suspension): never a spin."""

FAILURES_KEPT = 20
"""Failed attempts remembered per table for ``%mt history``."""
RECENT_KEPT = 20
"""Successful refreshes remembered per table (the watchdog's usual duration, recommendations, history marks)."""

TRIGGER_PRIORITY = {
    RefreshTrigger.SCHEDULED: 1,
    RefreshTrigger.CATCH_UP: 2,
    RefreshTrigger.CASCADE: 3,
    RefreshTrigger.MANUAL: 4,
    RefreshTrigger.INITIAL: 5,
}
"""When requests coalesce into one run, the run carries the most specific reason."""

SCHEDULE_TRIGGERS = (RefreshTrigger.SCHEDULED, RefreshTrigger.CATCH_UP)


class CascadeGroup:
    """One manual cascade (``REFRESH … --cascade``): its future completes once every run it reached has ended.

    The future carries the first table's outcome, or the first error of any run in the cascade, so "backfill
    with cascade, then read the result" works. Runs join the group as the cascade reaches them (inside the
    manager's lock, before the run that reached them settles), so the count cannot reach zero early.
    """

    def __init__(self) -> None:
        self.future: Future[RefreshOutcome] = Future()
        self._lock = threading.Lock()
        self._open = 0
        self._root: Future[RefreshOutcome] | None = None
        self._error: BaseException | None = None

    def track(self, future: Future[RefreshOutcome]) -> None:
        """Count ``future`` (a run of the cascade); the first one tracked is the cascade's own table."""
        with self._lock:
            self._open += 1
            if self._root is None:
                self._root = future
        future.add_done_callback(self._one_done)

    def _one_done(self, future: Future[RefreshOutcome]) -> None:
        error = future.exception()
        with self._lock:
            self._open -= 1
            if error is not None and self._error is None:
                self._error = error
            if self._open or self.future.done():
                return
            root, failed = self._root, self._error
        if failed is not None:
            self.future.set_exception(failed)
        else:
            assert root is not None
            self.future.set_result(root.result())


@dataclass
class PendingRun:
    """A refresh waiting to start. Requests for the same partition coalesce into one run."""

    trigger: RefreshTrigger
    due_at: datetime
    scheduled_time: datetime | None = None
    """The request's time; ``None`` for schedule runs, which take the latest missed fire when they start."""
    partition: Partition = ()
    cascade: bool = False
    """Refresh every downstream table afterwards even if nothing was written (a manual cascade)."""
    immediate: bool = False
    """Asked for by a user: runs even while suspended or backing off."""
    futures: list[Future[RefreshOutcome]] = field(default_factory=list)
    groups: list[CascadeGroup] = field(default_factory=list)
    """The manual cascades this run belongs to: the tables it reaches join them."""

    def absorb(self, other: PendingRun) -> None:
        """Coalesce ``other`` into this run: earliest deadline, most specific trigger, every waiter."""
        if TRIGGER_PRIORITY[other.trigger] > TRIGGER_PRIORITY[self.trigger]:
            self.trigger, self.scheduled_time = other.trigger, other.scheduled_time
        self.due_at = min(self.due_at, other.due_at)
        self.cascade |= other.cascade
        self.immediate |= other.immediate
        self.futures.extend(other.futures)
        self.groups.extend(g for g in other.groups if g not in self.groups)


@dataclass
class RunningJob:
    """A refresh handed to the worker pool, until its outcome is settled."""

    table: ScheduledTable
    run: PendingRun
    request: RefreshRequest
    started_at: datetime
    staleness_before: timedelta | None
    cancel_reason: str | None = None
    cancelled_at: datetime | None = None
    """When its job group was last cancelled (it is cancelled again while the job still runs)."""
    requeue: bool = False
    """Cancelled only to start over (ALTER AS, stop): run it again once it has ended."""
    progress: JobProgress | None = None
    progress_polled_at: datetime | None = None
    stall: Stall | None = None
    """Set by the watchdog once it runs past its stall threshold (``manager.watchdog``)."""
    abandoned: bool = False
    """Past its time limit: settled as failed by the watchdog; whatever its worker returns later is ignored."""

    @property
    def cancelled(self) -> bool:
        return self.cancel_reason is not None

    def stall_at(self, now: datetime) -> Stall | None:
        """Its stall as of ``now`` (how long it has run, Spark's latest view); ``None`` if never flagged."""
        if self.stall is None:
            return None
        return replace(self.stall, running_for=now - self.started_at, spark=self.progress or self.stall.spark)


class ScheduledTable:
    """The manager's mutable record of one table (guarded by the manager's lock)."""

    def __init__(
        self,
        table: ManagedTable,
        last_refresh: RefreshRecord | None = None,
        *,
        scheduling: bool = True,
        recent: Sequence[RefreshRecord] = (),
    ) -> None:
        self.table = table
        self.scheduling = scheduling
        """``False`` for an inline manager: only requested runs happen, none by schedule."""
        self.schedule = schedule_for(table)
        self.suspended = table.suspended
        self.options: tuple[tuple[str, str], ...] = ()
        self.pending: dict[Partition, PendingRun] = {}
        self.base = table.last_refresh_at
        """The time the next scheduled run is counted from (last run's fire time or start)."""
        self.not_before: datetime | None = None
        self.failures = 0
        self.conflicts = 0
        """Refreshes in a row that lost to another writer's commit (retried promptly, not counted as failures)."""
        self.last_error: str | None = None
        self.gave_up = False
        """Suspended itself after ``RetryPolicy.suspend_after`` failures in a row (in this process only)."""
        self.failure_records: deque[RefreshRecord] = deque(maxlen=FAILURES_KEPT)
        """The latest failed attempts, for ``%mt history`` (failures commit nothing to the catalog)."""
        self.last_refresh = last_refresh
        self.recent: deque[RefreshRecord] = deque(recent, maxlen=RECENT_KEPT)
        """The latest successful refreshes, newest first: the catalog's history at discovery, then this process's."""
        self.pending_since: datetime | None = None
        self.pending_checked_at: datetime | None = None
        self.missing_source: MissingSource | None = None
        """Set by a staleness poll or a refresh that found a source gone; cleared by the next that finds them all."""
        self.refused = False
        """The last refresh was refused (:class:`InvalidTableError`): held, never retried, until a statement
        redefines the table or a refresh by hand succeeds."""
        self.published_state: JobState | None = None
        self.held_refresh: HeldRefresh | None = None
        """The last attempt was held by a ``FAIL UPDATE`` expectation (from its error's facts); cleared by the next
        attempt that is not."""

    @property
    def name(self) -> str:
        return self.table.name

    def manual_waiting(self) -> bool:
        """Whether a refresh a user asked for (REFRESH, a card's button) waits to run."""
        return any(run.immediate for run in self.pending.values())

    def latest_failures(self) -> list[RefreshRecord]:
        """The latest failed refreshes in this process, newest first."""
        return list(reversed(self.failure_records))

    @property
    def elsewhere(self) -> bool:
        """Another workflow scheduler (Airflow) runs its refreshes: shown here, never scheduled or leased here."""
        return self.table.scheduler is not WorkflowSchedulerKind.KERNEL

    def request(self, run: PendingRun) -> None:
        """Queue ``run``, coalescing it with a pending run of the same partition."""
        existing = self.pending.get(run.partition)
        if existing is None:
            self.pending[run.partition] = run
        else:
            existing.absorb(run)

    def arm(self, now: datetime, trigger: RefreshTrigger = RefreshTrigger.SCHEDULED) -> None:
        """Make sure the next whole-table run is pending; ``trigger`` names it if the table is behind."""
        if self.suspended or self.gave_up or not self.scheduling or () in self.pending or self.elsewhere:
            return
        due = self.schedule.next_after(self.base) if self.base is not None else now
        self.request(PendingRun(trigger if due <= now else RefreshTrigger.SCHEDULED, due))

    def due_run(self, now: datetime) -> PendingRun | None:
        """The earliest run that may start at ``now``, if any."""
        gated = self.held or (self.not_before is not None and now < self.not_before)
        due = [run for run in self.pending.values() if run.due_at <= now and (run.immediate or not gated)]
        return min(due, key=lambda run: run.due_at, default=None)

    def next_due(self) -> datetime | None:
        """When the next pending run may start, honouring suspension and backoff."""
        times = []
        for run in self.pending.values():
            if run.immediate:
                times.append(run.due_at)
            elif not self.held:
                times.append(max(run.due_at, self.not_before) if self.not_before else run.due_at)
        return min(times, default=None)

    @property
    def held(self) -> bool:
        """No scheduled run starts: suspended, given up, refused, or a source is missing. A missing source holds the
        schedule without backing off or giving up: a refresh could only fail the same way, so none is tried until a
        staleness poll finds every source again (then the held run is due at once). A manual refresh still runs."""
        return self.suspended or self.gave_up or self.missing_source is not None or self.refused

    def take(self, run: PendingRun) -> None:
        """Remove ``run`` from the queue because it starts now."""
        del self.pending[run.partition]

    def requeue(self, run: PendingRun, due_at: datetime, *, keep_waiters: bool = True) -> None:
        """Put a run that did not complete back in the queue."""
        futures = list(run.futures) if keep_waiters else []
        groups = list(run.groups) if keep_waiters else []
        self.request(replace(run, due_at=due_at, immediate=False, futures=futures, groups=groups))

    def drain(self) -> list[Future[RefreshOutcome]]:
        """Forget every pending run; returns their waiters."""
        futures = [f for run in self.pending.values() for f in run.futures]
        self.pending.clear()
        return futures

    def succeeded(self, job: RunningJob, outcome: RefreshOutcome, now: datetime) -> RefreshRecord:
        """Record a completed refresh and schedule the next one from it."""
        self.failures, self.last_error, self.not_before, self.gave_up = 0, None, None, False
        self.conflicts, self.missing_source, self.held_refresh, self.refused = 0, None, None, False
        self.table = replace(self.table, held=None)  # what the catalog showed is this run's to say now
        self.last_refresh = RefreshRecord(
            kind=outcome.kind,
            trigger=job.request.trigger,
            started_at=job.started_at,
            duration=now - job.started_at,
            rows_written=outcome.rows_written,
            snapshot_id=outcome.snapshot_id,
            staleness_before=job.staleness_before,
            strategy=outcome.strategy,
            engine=outcome.engine,
            stall=job.stall_at(now),
        )
        self.recent.appendleft(self.last_refresh)
        if job.run.partition == ():
            self.base = self.schedule.anchor(job.started_at, job.request.scheduled_time)
        self.arm(now)
        return self.last_refresh

    def failed(
        self, job: RunningJob, error: BaseException, now: datetime, policy: RetryPolicy, rng: random.Random
    ) -> timedelta | None:
        """Count a failure; queue the run again after a backoff, or give up after too many in a row.

        Returns:
            The delay before the next attempt (zero for a missing source: held until it is back; zero for a refusal:
            held until the table is redefined); ``None`` when the table gave up (it waits for RESUME).
        """
        self.failures += 1
        self.last_error = f"{type(error).__name__}: {error}"
        self.held_refresh = error.held if isinstance(error, ExpectationsHeldError) else None
        self.table = replace(self.table, held=None)  # what the catalog showed is this run's to say now
        self.record_failure(job, self.last_error, now)
        self.refused = isinstance(error, InvalidTableError)
        if self.refused:  # held (see held) until a statement redefines the table: retrying cannot mend it
            return timedelta(0)
        if isinstance(error, NoSuchSourceTableError):  # held (see held) until a poll finds it: no backoff, no giving up
            self.missing_source = MissingSource(error.source, str(error))
            self.requeue(job.run, now, keep_waiters=False)
            return timedelta(0)
        if policy.gives_up(self.failures):
            self.gave_up, self.not_before = True, None
            self.drain()
            return None
        delay = policy.delay(self.failures, rng)
        self.not_before = now + delay
        self.requeue(job.run, self.not_before, keep_waiters=False)
        return delay

    def record_failure(self, job: RunningJob, error: str, now: datetime) -> None:
        """Remember an attempt that committed nothing, for ``%mt history`` (with its stall, if it stalled)."""
        self.failure_records.append(
            RefreshRecord(
                kind=RefreshKind.FULL,
                trigger=job.request.trigger,
                started_at=job.started_at,
                duration=now - job.started_at,
                rows_written=0,
                snapshot_id=None,
                error=error,
                stall=job.stall_at(now),
            )
        )

    def conflicted(self, job: RunningJob, now: datetime, rng: random.Random) -> timedelta | None:
        """Another writer committed first: run again soon, with the same waiters, without counting a failure.

        Returns:
            The delay before the next attempt (none for an inline manager: again within the same call); ``None``
            after too many conflicts in a row (then it is a failure).
        """
        self.conflicts += 1
        if self.conflicts > MAX_CONFLICTS_IN_A_ROW:
            self.conflicts = 0
            return None
        delay = CONFLICT_RETRY * min(self.conflicts, 5) * rng.uniform(0.5, 1.5) if self.scheduling else timedelta(0)
        self.request(replace(job.run, due_at=now + delay))
        return delay

    def suspend(self) -> list[Future[RefreshOutcome]]:
        """Stop scheduling; returns the waiters of the runs that will not happen."""
        self.suspended = True
        self.options = ()
        return self.drain()

    def resume(self, options: tuple[tuple[str, str], ...], now: datetime) -> None:
        """Schedule again with a clean failure count; ``options`` apply until the next suspend."""
        self.suspended = False
        self.options = options
        self.failures, self.not_before, self.gave_up = 0, None, False
        self.arm(now)

    def redefine(self, table: ManagedTable, now: datetime) -> None:
        """Adopt a changed definition (which lifts a refusal: :attr:`refused`); a changed schedule replaces the
        pending scheduled run.

        Raises:
            ValueError: the new cron or freshness is invalid (nothing changed then).
        """
        schedule = schedule_for(table)
        old, self.table, lifted, self.refused = self.table, table, self.refused, False
        if (table.mode, table.freshness, table.cron) != (old.mode, old.freshness, old.cron):
            slot = self.pending.get(())
            if slot is not None and slot.trigger in SCHEDULE_TRIGGERS:
                del self.pending[()]
            self.schedule = schedule
            self.arm(now)
        elif lifted:
            self.arm(now)

    def staleness(self, now: datetime) -> timedelta | None:
        """``now`` minus the oldest unreflected source change (zero when caught up, ``None`` if unknown)."""
        if self.pending_checked_at is None or self.missing_source is not None:
            return None
        if self.pending_since is None:
            return timedelta(0)
        return max(now - self.pending_since, timedelta(0))

    def state(self, job: RunningJob | None, policy: RetryPolicy) -> JobState:
        """The state shown for this table, given its running job (if any)."""
        if job is not None and not job.cancelled:
            return JobState.RUNNING
        if self.suspended:
            return JobState.SUSPENDED
        if job is not None:
            return JobState.RUNNING
        if self.gave_up:
            return JobState.FAILED
        if self.failures and self.missing_source is None and not self.refused:  # held, not retried: the card says why
            return JobState.RETRYING
        return JobState.SCHEDULED if self.pending else JobState.IDLE

    def snapshot(self, now: datetime, job: RunningJob | None, policy: RetryPolicy) -> TableStatus:
        """An immutable status of this table at ``now``."""
        return TableStatus(
            name=self.name,
            mode=self.table.mode,
            freshness=self.table.freshness,
            state=self.state(job, policy),
            mode_reason=self.table.mode_reason,
            last_refresh=self.last_refresh,
            next_refresh_at=self.next_due(),
            staleness=self.staleness(now),
            last_error=self.last_error,
            consecutive_failures=self.failures,
            progress=job.progress if job is not None and not job.cancelled else None,
            upstream=self.table.sources,
            scheduler=self.table.scheduler,
            stall=job.stall_at(now) if job is not None and not job.cancelled else None,
            recent=tuple(self.recent),
            missing_source=self.missing_source,
            held=self.held_refresh or self.table.held,
        )
