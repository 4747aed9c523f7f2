"""The RefreshManager's scheduling state and its transitions, free of threads and I/O.

The manager calls these methods while holding its lock, then does what they return as :class:`Effects`
(cancel job groups, resolve waiters) after releasing it, and delivers the queued events to subscribers.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from mt_magic.errors import (
    CatalogUnavailableError,
    NoSuchMaterializedTableError,
    RefreshCancelledError,
    RefreshConflictError,
)
from mt_magic.runtime.graph import blocking_ancestors, cascaded_partition, dependents
from mt_magic.runtime.manager.lease_keeper import LeaseKeeper
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.manager.tracked import PendingRun, RunningJob, ScheduledTable
from mt_magic.runtime.status import (
    EventKind,
    ManagedTable,
    RefreshEvent,
    RefreshOutcome,
    RefreshRecord,
    RefreshRequest,
    TableStatus,
)
from mt_magic.vocabulary import RefreshKind, RefreshMode, RefreshTrigger

log = logging.getLogger(__name__)

Settlement = tuple[Future[RefreshOutcome], RefreshOutcome | None, BaseException | None]


@dataclass
class Effects:
    """What a transition asks the manager to do once its lock is released."""

    cancel: list[str] = field(default_factory=list)
    """Job groups to cancel through the backend."""
    settle: list[Settlement] = field(default_factory=list)
    """Waiters to resolve with an outcome or an error."""

    def cancel_group(self, group: str | None) -> None:
        if group is not None:
            self.cancel.append(group)

    def fail(self, futures: Iterable[Future[RefreshOutcome]], error: BaseException) -> None:
        self.settle.extend((future, None, error) for future in futures)

    @property
    def empty(self) -> bool:
        """Nothing to cancel or settle."""
        return not self.cancel and not self.settle

    def absorb(self, other: Effects) -> None:
        self.cancel.extend(other.cancel)
        self.settle.extend(other.settle)


class SchedulerState:
    """Every table, every running job, the event queue and the catalog pause, with their transitions."""

    def __init__(
        self,
        policy: RetryPolicy,
        rng: random.Random,
        max_jobs: int,
        *,
        scheduling: bool = True,
        leases: LeaseKeeper | None = None,
    ) -> None:
        self.policy = policy
        self.scheduling = scheduling
        """``False`` for an inline manager: no schedules, no automatic cascades, no discovery of its own."""
        self.rng = rng
        self.max_jobs = max_jobs
        self.tables: dict[str, ScheduledTable] = {}
        self.jobs: dict[str, RunningJob] = {}
        """At most one job per table name — also across a drop and re-create while the old job winds down."""
        self.removed: set[str] = set()
        """Dropped here; discovery ignores them until the catalog no longer lists them."""
        self.events: deque[RefreshEvent] = deque()
        self.pause_reason: str | None = None
        self.catalog_failures = 0
        self.discover_at: datetime | None = None
        """When to list the catalog next; ``None`` means at the next step."""
        self.leases = leases
        """One refresher per table: runs start only for tables whose lease this manager holds (``None``: all)."""
        self.lease_at: datetime | None = None
        """When to take this manager's turn at the lease map next; ``None`` means at the next step."""
        self.version = 0
        """Counts the changes a status could show (every event, a new pending change, a request): a view whose
        version is unchanged needs to read no status (``RefreshManager.version``)."""

    # -- tables ----------------------------------------------------------------------------------------

    def find(self, name: str) -> ScheduledTable | None:
        """The tracked table ``name`` (``None``: not tracked)."""
        return self.tables.get(name)

    def table(self, name: str) -> ScheduledTable:
        """Raises:
        NoSuchMaterializedTableError: ``name`` is not tracked."""
        entry = self.tables.get(name)
        if entry is None:
            raise NoSuchMaterializedTableError(f"{name!r} is not a materialized table the refresh manager knows")
        return entry

    def knows(self, name: str) -> bool:
        return name in self.tables

    def entries(self) -> list[ScheduledTable]:
        """Every tracked table (a copy of the list: the lock's holder may change the state while iterating it)."""
        return list(self.tables.values())

    def table_count(self) -> int:
        return len(self.tables)

    def known_names(self) -> set[str]:
        """The tracked tables and those dropped here (discovery reads the history of neither)."""
        return set(self.tables) | self.removed

    def is_current(self, job: RunningJob) -> bool:
        """Whether ``job`` refreshes the table as tracked now (not one dropped, or re-created, since it started)."""
        return self.tables.get(job.request.table) is job.table

    def discovery_due(self, now: datetime) -> bool:
        return self.discover_at is None or now >= self.discover_at

    def discover_next(self, at: datetime) -> None:
        """List the catalog again at ``at``."""
        self.discover_at = at

    def paused(self) -> bool:
        """Whether work is paused because the catalog cannot be reached."""
        return self.pause_reason is not None

    def snapshots(self, now: datetime, names: Iterable[str] | None = None) -> list[TableStatus]:
        """Every tracked table's status (of those among ``names``, when given), sorted by name."""
        wanted = self.tables if names is None else {name for name in names if name in self.tables}
        return [self.snapshot(self.tables[name], now) for name in sorted(wanted)]

    def lease_holder(self) -> str | None:
        """This manager's name in the catalog's lease map (``None``: leasing is off)."""
        return self.leases.holder if self.leases is not None else None

    def lease_turn_due(self, now: datetime) -> bool:
        """Whether this manager takes its turn at the lease map now (never when leasing is off)."""
        return self.leases is not None and (self.lease_at is None or now >= self.lease_at)

    def next_lease_turn(self, at: datetime) -> None:
        """Take this manager's next turn at the lease map at ``at``."""
        self.lease_at = at

    def want_leases_now(self) -> None:
        """Take this manager's turn at the lease map at the next step (a lease is wanted, or wanted back)."""
        self.lease_at = None

    def insert(
        self,
        table: ManagedTable,
        last_refresh: RefreshRecord | None,
        now: datetime,
        recent: Sequence[RefreshRecord] = (),
    ) -> ScheduledTable:
        """Track a new table; one behind its schedule (or never refreshed) is caught up once, now."""
        entry = ScheduledTable(table, last_refresh, scheduling=self.scheduling, recent=recent)
        self.tables[table.name] = entry
        self.lease_at = None  # its lease is wanted now
        self.removed.discard(table.name)
        entry.arm(now, RefreshTrigger.CATCH_UP)
        self.publish(EventKind.TABLE_ADDED, entry, now)
        return entry

    def forget(self, name: str, now: datetime, reason: str) -> Effects:
        """Stop tracking ``name``: cancel its job, fail its waiters."""
        entry = self.tables.pop(name)
        effects = Effects()
        effects.fail(entry.drain(), RefreshCancelledError(f"refresh of {name} cancelled: {reason}"))
        effects.cancel_group(self.cancel_job(name, reason, requeue=False))
        self.events.append(RefreshEvent(EventKind.TABLE_REMOVED, name, now, None, reason))
        return effects

    def remove(self, name: str, now: datetime, reason: str) -> Effects:
        """:meth:`forget` a table dropped (or renamed) here: discovery ignores it until the catalog no longer
        lists it."""
        effects = self.forget(name, now, reason)
        self.removed.add(name)
        return effects

    def suspend(self, entry: ScheduledTable, now: datetime, reason: str) -> Effects:
        """Suspend: cancel the running job (it will not count) and drop pending runs."""
        effects = Effects()
        if entry.suspended:
            return effects
        effects.fail(entry.suspend(), RefreshCancelledError(f"refresh of {entry.name} cancelled: {reason}"))
        effects.cancel_group(self.cancel_job(entry.name, reason, requeue=False))
        self.publish(EventKind.STATE_CHANGED, entry, now, reason)
        return effects

    def resume(self, entry: ScheduledTable, options: tuple[tuple[str, str], ...], now: datetime) -> None:
        """Resume with ``options`` for this resumption's runs (only updates the options if not suspended)."""
        if not entry.suspended and not entry.gave_up:
            entry.options = options
            return
        entry.resume(options, now)
        self.lease_at = None
        self.publish(EventKind.STATE_CHANGED, entry, now, "resumed")

    def redefine(self, entry: ScheduledTable, table: ManagedTable, now: datetime, *, local: bool) -> Effects:
        """Adopt a changed definition.

        Args:
            local: made in this process (ALTER): a running job starts over and ``suspended`` applies as given.
                Otherwise it was seen in the catalog: ``suspended`` applies only if it changed there.

        Raises:
            ValueError: the new schedule is invalid; nothing changed.
        """
        was_suspended = entry.suspended if local else entry.table.suspended
        entry.redefine(table, now)
        effects = Effects()
        if local:
            effects.cancel_group(self.cancel_job(entry.name, "definition changed", requeue=True))
        if table.suspended and not was_suspended:
            effects.absorb(self.suspend(entry, now, "suspended"))
        elif was_suspended and not table.suspended:
            self.resume(entry, (), now)
        else:
            self.publish(EventKind.STATE_CHANGED, entry, now, "definition changed")
        return effects

    def cancel_job(self, name: str, reason: str, requeue: bool) -> str | None:
        """Mark ``name``'s running job cancelled; returns its job group the first time, else ``None``."""
        job = self.jobs.get(name)
        if job is None:
            return None
        first = not job.cancelled
        job.requeue = requeue if first else job.requeue and requeue
        job.cancel_reason = job.cancel_reason or reason
        return job.request.job_group if first else None

    def has_jobs(self) -> bool:
        return bool(self.jobs)

    def running(self) -> list[RunningJob]:
        """Every running job, cancelled ones too (a copy of the list)."""
        return list(self.jobs.values())

    def running_names(self) -> list[str]:
        return list(self.jobs)

    def cancel_jobs(self, reason: str, requeue: bool) -> Effects:
        """:meth:`cancel_job` of every running job."""
        effects = Effects()
        for name in list(self.jobs):
            effects.cancel_group(self.cancel_job(name, reason, requeue))
        return effects

    def detach_waiters(self) -> list[Future[RefreshOutcome]]:
        """Take every waiter of every pending and running run off it (their runs still happen, unwaited)."""
        runs = [run for entry in self.tables.values() for run in entry.pending.values()]
        runs += [job.run for job in self.jobs.values()]
        waiters = [future for run in runs for future in run.futures]
        for run in runs:
            run.futures = []
        return waiters

    # -- running ---------------------------------------------------------------------------------------

    def select_due(self, now: datetime) -> list[tuple[ScheduledTable, PendingRun]]:
        """The runs to start now: by deadline, upstream before downstream, within the concurrency cap."""
        if self.pause_reason is not None:
            return []
        candidates = []
        for entry in self.tables.values():
            run = entry.due_run(now) if entry.name not in self.jobs and self.may_run(entry.name, now) else None
            if run is not None:
                candidates.append((run.due_at, entry.name, entry, run))
        upstream = {name: entry.table.upstream for name, entry in self.tables.items()}
        busy = {name for name, job in self.jobs.items() if not job.cancelled} | {c[1] for c in candidates}
        busy |= {name for name, entry in self.tables.items() if entry.gave_up}  # their readers wait
        ready = [
            (entry, run) for _, name, entry, run in sorted(candidates) if not blocking_ancestors(name, upstream) & busy
        ]
        return ready[: max(self.max_jobs - len(self.jobs), 0)]

    def may_run(self, name: str, now: datetime) -> bool:
        """Whether this manager may start a refresh of ``name``: it holds the table's lease (or leasing is off)."""
        return self.leases is None or self.leases.holds(name, now)

    def begin(self, entry: ScheduledTable, run: PendingRun, request: RefreshRequest, now: datetime) -> RunningJob:
        """Record that ``run`` starts now as ``request``."""
        entry.take(run)
        job = RunningJob(entry, run, request, now, entry.staleness(now))
        self.jobs[entry.name] = job
        self.publish(EventKind.REFRESH_STARTED, entry, now, run.trigger.value)
        return job

    def settle(
        self, job: RunningJob, outcome: RefreshOutcome | None, error: BaseException | None, now: datetime
    ) -> Effects:
        """Account for a finished job: success, failure (backoff), cancellation or an unreachable catalog."""
        name = job.request.table
        if job.abandoned:
            log.warning("refresh of %s ended after the manager gave up on it (time limit); not counted", name)
            return Effects()
        if self.jobs.get(name) is job:
            del self.jobs[name]
        current = self.tables.get(name) is job.table
        if job.cancelled or not current:
            if outcome is not None:
                log.warning("refresh of %s returned after it was cancelled; not counted", name)
            return self._settle_cancelled(job, now, current)
        if isinstance(error, CatalogUnavailableError):
            job.table.requeue(job.run, job.run.due_at)
            if self.pause_reason is None:
                self.pause(str(error), now)
            return Effects()
        if isinstance(error, RefreshConflictError):
            delay = job.table.conflicted(job, now, self.rng)
            if delay is not None:
                self.publish(
                    EventKind.STATE_CHANGED,
                    job.table,
                    now,
                    f"another writer committed first ({error}); retrying in {delay}",
                )
                return Effects()
        if error is not None:
            return self._settle_failed(job, error, now)
        assert outcome is not None
        return self._settle_succeeded(job, outcome, now)

    def _settle_cancelled(self, job: RunningJob, now: datetime, current: bool) -> Effects:
        reason = job.cancel_reason or "table removed"
        effects = Effects()
        if current and job.requeue:
            job.table.requeue(job.run, job.run.due_at)
        else:
            effects.fail(job.run.futures, RefreshCancelledError(f"refresh of {job.request.table} cancelled: {reason}"))
        if current:
            if job.stall is not None:
                job.table.record_failure(job, f"cancelled after it stalled: {reason}", now)
            job.table.arm(now)
            self.publish(EventKind.STATE_CHANGED, job.table, now, f"refresh cancelled: {reason}")
        return effects

    def abandon(self, job: RunningJob, error: BaseException, now: datetime) -> Effects:
        """Give up on a run past its time limit: a failure now (backoff, waiters failed), its slot and lease free,
        its job group cancelled; its worker's later answer is ignored (``manager.watchdog``)."""
        job.abandoned = True
        del self.jobs[job.request.table]
        effects = self._settle_failed(job, error, now)
        effects.cancel_group(job.request.job_group)
        return effects

    def _settle_failed(self, job: RunningJob, error: BaseException, now: datetime) -> Effects:
        entry = job.table
        delay = entry.failed(job, error, now, self.policy, self.rng)
        if delay is None:
            message = (
                f"{entry.last_error}; failed {entry.failures} times in a row, so it is suspended (and the "
                "tables reading it wait) until ALTER … RESUME"
            )
        elif entry.missing_source is not None:
            message = f"{entry.last_error}; no refresh until {entry.missing_source.source} exists again"
        elif entry.refused:
            message = f"{entry.last_error}; no scheduled refresh until the table is redefined or dropped"
        else:
            message = f"{entry.last_error}; retry in {delay}"
        log.info("refresh of %s failed (%d in a row): %s", entry.name, entry.failures, message)
        self.publish(EventKind.REFRESH_FAILED, entry, now, message)
        effects = Effects()
        effects.fail(job.run.futures, error)
        return effects

    def _settle_succeeded(self, job: RunningJob, outcome: RefreshOutcome, now: datetime) -> Effects:
        entry = job.table
        entry.succeeded(job, outcome, now)
        if outcome.kind is not RefreshKind.NOOP or job.run.cascade:
            self._cascade(entry, job.run, now)
        self.publish(EventKind.REFRESH_SUCCEEDED, entry, now, outcome.strategy or outcome.kind.value)
        return Effects(settle=[(future, outcome, None) for future in job.run.futures])

    def _cascade(self, entry: ScheduledTable, run: PendingRun, now: datetime) -> None:
        """Make the direct downstream tables due now; they cascade further when they commit in turn.

        An automatic cascade (an upstream commit) reaches CONTINUOUS tables only: FULL tables keep their cron
        schedule, as in Flink. A manual cascade (``REFRESH … --cascade``) reaches every downstream table, each
        with the backfilled partition where it is partitioned by the same columns (else the whole table:
        :func:`~mt_magic.runtime.graph.cascaded_partition`), and joins the cascade's groups.
        """
        upstream = {name: other.table.upstream for name, other in self.tables.items()}
        for name in dependents(entry.name, upstream):
            down = self.tables[name]
            if not run.cascade and (not self.scheduling or down.table.mode is not RefreshMode.CONTINUOUS):
                continue
            if down.suspended:
                continue
            partition = cascaded_partition(run.partition, down.table.partitioned_by) if run.cascade else ()
            follow = PendingRun(RefreshTrigger.CASCADE, now, now, partition, run.cascade, groups=list(run.groups))
            for group in run.groups:
                future: Future[RefreshOutcome] = Future()
                group.track(future)
                follow.futures.append(future)
            down.request(follow)
            self.note_state(down, now)

    # -- catalog ---------------------------------------------------------------------------------------

    def apply_discovery(
        self,
        tables: Sequence[ManagedTable],
        last_refresh: dict[str, RefreshRecord | None],
        now: datetime,
        recent: Mapping[str, Sequence[RefreshRecord]] | None = None,
    ) -> Effects:
        """Reconcile with the catalog's list: new tables appear, dropped ones go, external changes apply."""
        seen = {table.name for table in tables}
        self.removed &= seen
        effects = Effects()
        for table in tables:
            entry = self.tables.get(table.name)
            try:
                if entry is None and table.name not in self.removed:
                    self.insert(table, last_refresh.get(table.name), now, (recent or {}).get(table.name, ()))
                elif entry is not None and replace(table, last_refresh_at=None, held=None) != replace(
                    entry.table, last_refresh_at=None, held=None
                ):
                    effects.absorb(self.redefine(entry, table, now, local=False))
                elif entry is not None and table.held != entry.table.held:  # held or published by another process
                    entry.table = replace(entry.table, held=table.held)
                    self.publish(EventKind.STATE_CHANGED, entry, now, "held" if table.held else "no longer held")
            except ValueError as exc:
                log.error("cannot schedule materialized table %s: %s", table.name, exc)
        for name in [name for name in self.tables if name not in seen]:
            effects.absorb(self.forget(name, now, "dropped from the catalog"))
        if self.pause_reason is not None:
            self._unpause(now)
        return effects

    def pause(self, reason: str, now: datetime) -> timedelta:
        """The catalog cannot be reached: start nothing and try discovery again after a backoff."""
        self.catalog_failures += 1
        delay = self.policy.delay(self.catalog_failures, self.rng)
        self.discover_at = now + delay
        if self.pause_reason is None:
            self.pause_reason = reason
            log.warning("catalog unavailable, pausing refreshes: %s", reason)
            for entry in self.tables.values():
                self.publish(EventKind.STATE_CHANGED, entry, now, f"paused: catalog unavailable ({reason})")
        return delay

    def _unpause(self, now: datetime) -> None:
        log.info("catalog reachable again, resuming refreshes")
        self.pause_reason, self.catalog_failures = None, 0
        for entry in self.tables.values():
            self.publish(EventKind.STATE_CHANGED, entry, now, "catalog reachable again")

    # -- views -----------------------------------------------------------------------------------------

    def snapshot(self, entry: ScheduledTable, now: datetime) -> TableStatus:
        status = replace(entry.snapshot(now, self.jobs.get(entry.name), self.policy), paused=self.pause_reason)
        upstream = self.oldest_upstream_change(entry)
        if status.staleness is not None and upstream is not None:
            since, name = upstream
            if entry.pending_since is None or since < entry.pending_since:
                status = replace(status, staleness=max(now - since, timedelta(0)), behind_upstream=name)
        if self.leases is None:
            return status
        holder = self.leases.holder_of(entry.name, now)
        return replace(status, refreshed_by=holder, refreshed_here=holder == self.leases.holder)

    def oldest_upstream_change(self, entry: ScheduledTable) -> tuple[datetime, str] | None:
        """The oldest source change not yet reflected by a materialized table upstream of ``entry`` (through every
        level this manager tracks), and that table: ``None`` when every one is caught up (or unknown here)."""
        oldest: tuple[datetime, str] | None = None
        pending, seen = list(entry.table.upstream), set()
        while pending:
            name = pending.pop()
            up = self.tables.get(name)
            if name in seen or up is None:
                continue
            seen.add(name)
            if up.pending_since is not None and (oldest is None or up.pending_since < oldest[0]):
                oldest = (up.pending_since, name)
            pending.extend(up.table.upstream)
        return oldest

    def has_events(self) -> bool:
        return bool(self.events)

    def next_event(self) -> RefreshEvent | None:
        """The oldest event not delivered yet, taken off the queue (``None``: none)."""
        return self.events.popleft() if self.events else None

    def publish(self, kind: EventKind, entry: ScheduledTable, now: datetime, message: str = "") -> None:
        """Queue an event carrying the table's status right after it."""
        status = self.snapshot(entry, now)
        entry.published_state = status.state
        self.events.append(RefreshEvent(kind, entry.name, now, status, message))
        self.version += 1

    def changed(self) -> None:
        """Something a status shows changed without an event (a pending change, a run requested)."""
        self.version += 1

    def note_state(self, entry: ScheduledTable, now: datetime) -> None:
        """Queue STATE_CHANGED if the table's state differs from the last one published."""
        if entry.state(self.jobs.get(entry.name), self.policy) != entry.published_state:
            self.publish(EventKind.STATE_CHANGED, entry, now)

    def next_deadline(self, now: datetime) -> datetime | None:
        """The earliest future time a run, or discovery, becomes due (runs due already wait for a wake-up)."""
        times: list[datetime | None] = [self.discover_at, self.lease_at]
        if self.pause_reason is None:
            times += [entry.next_due() for entry in self.tables.values() if entry.name not in self.jobs]
        return min((t for t in times if t is not None and t > now), default=None)
