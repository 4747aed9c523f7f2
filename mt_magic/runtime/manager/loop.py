"""The I/O half of the RefreshManager: one scheduling pass, the worker pool, the polls and event delivery.

:class:`~mt_magic.runtime.manager.state.SchedulerState` decides; this runner talks to the backend (discover,
history, refresh, cancel, progress, pending_since) without holding the lock, applies the results under the
lock, and delivers events to subscribers on the thread that runs the pass.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TypeVar

from mt_magic.errors import CatalogUnavailableError, NoSuchSourceTableError, RefreshCancelledError
from mt_magic.runtime.manager.backend import RefreshBackend
from mt_magic.runtime.manager.lease_pass import lease_pass
from mt_magic.runtime.manager.state import Effects, SchedulerState
from mt_magic.runtime.manager.tracked import PendingRun, RunningJob, ScheduledTable
from mt_magic.runtime.manager.watchdog import RECENT_RUNS, StallPolicy, watch
from mt_magic.runtime.spark.jobs import job_group_prefix
from mt_magic.runtime.status import (
    EventKind,
    ManagedTable,
    MissingSource,
    RefreshEvent,
    RefreshOutcome,
    RefreshRecord,
    RefreshRequest,
)

log = logging.getLogger(__name__)

Subscriber = Callable[[RefreshEvent], None]
T = TypeVar("T")

MIN_STALENESS_EVERY = timedelta(seconds=1)
STALENESS_POLLS_PER_FRESHNESS = 5
"""A table's staleness is polled this many times per freshness period (but never more often than every
``MIN_STALENESS_EVERY``): a 5-second table cached for 5 seconds would report a lag it no longer has, or miss one it
has."""
STALENESS_LAG_FRACTION = 100
"""A long-freshness table is polled at least every ``staleness_every`` or every hundredth of its freshness, whichever
is longer: its card learns of a source change within 1 % of its target (14 minutes for a daily table), and an idle
kernel holding hundreds of daily tables does not poll each of them every 5 s (0.1 CPU-second per table per minute,
issue 37)."""


class InlineExecutor(Executor):
    """Runs each submitted refresh at once on the submitting thread: the executor of an inline manager."""

    def submit(self, fn: Callable[..., T], /, *args: object, **kwargs: object) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the job itself records its outcome; keep the executor's contract
            future.set_exception(exc)
        return future


class RefreshRunner:
    """Runs scheduling passes against a backend for a :class:`SchedulerState` guarded by ``lock``."""

    def __init__(
        self,
        backend: RefreshBackend,
        state: SchedulerState,
        lock: threading.RLock,
        clock: Callable[[], datetime],
        *,
        executor: Executor | None,
        rediscover_every: timedelta,
        progress_every: timedelta,
        staleness_every: timedelta,
        stall_policy: StallPolicy | None = None,
    ) -> None:
        self.backend = backend
        self.stall_policy = stall_policy or StallPolicy()
        self.state = state
        self.lock = lock
        self.clock = clock
        self.changed = threading.Condition(lock)
        """Notified whenever jobs end or events are delivered (``wait_idle``, ``stop``)."""
        self.wake = threading.Event()
        """Set by anything that may make work due; the scheduler thread waits on it."""
        self.stopping = threading.Event()
        self.subscribers: list[Subscriber] = []
        self.rediscover_every = rediscover_every
        self.progress_every = progress_every
        self.staleness_every = staleness_every
        self._executor = executor
        self._owns_executor = executor is None
        self._dispatch_lock = threading.Lock()
        self._dispatching = False
        self._job_numbers = itertools.count(1)
        self._checked: dict[str, tuple[datetime, ManagedTable]] = {}
        """When discovery last asked the catalog about each table (not only listed it), and what it adopted then."""

    def step(self) -> list[RefreshRequest]:
        """Discover if due, poll progress and staleness, start every due run, deliver events."""
        now = self.clock()
        if self.state.scheduling and self.discovery_due(now):
            self.discover(now)
        if self.state.lease_turn_due(now):
            self._apply_if_any(lease_pass(self.state, self.lock, now))  # the runs it allows start below
        self._poll_progress(now)
        self._watch(now)
        self.recancel(now)
        if self.state.scheduling:
            self._poll_staleness(now)
        started: list[RefreshRequest] = []
        for _ in range(4 * self.state.table_count() + 4):  # inline executors finish runs that make others due
            batch = self._start_due(self.clock())
            if not batch:
                break
            started += batch
        self.dispatch_events()
        return started

    def discovery_due(self, now: datetime) -> bool:
        return self.state.discovery_due(now)

    def discover(self, now: datetime) -> None:
        """List the catalog's tables and reconcile; an unreachable catalog pauses work instead.

        Each table is asked about only every :meth:`recheck_every_for` (its definition changed elsewhere shows then);
        the listing itself, every ``rediscover_every``, finds new and dropped tables.
        """
        with self.lock:
            reuse = frozenset(entry.name for entry in self.state.entries() if self._checked_recently(entry, now))
        try:
            tables = list(self.backend.discover(reuse))
            with self.lock:
                known = self.state.known_names()
            recent = {t.name: self._recent_refreshes(t.name) for t in tables if t.name not in known}
            last_refresh = {name: records[0] if records else None for name, records in recent.items()}
        except CatalogUnavailableError as exc:
            with self.lock:
                self.state.pause(str(exc), now)
            return
        except Exception:
            log.exception("discovering materialized tables failed; trying again in %s", self.rediscover_every)
            with self.lock:
                self.state.discover_next(now + self.rediscover_every)
            return
        with self.lock:
            effects = self.state.apply_discovery(tables, last_refresh, now, recent)
            self.state.discover_next(now + self.rediscover_every)
            self._checked = {
                entry.name: self._checked[entry.name] if entry.name in reuse else (now, entry.table)
                for entry in self.state.entries()
            }
        self.apply(effects)

    def _recent_refreshes(self, name: str) -> list[RefreshRecord]:
        """The newest refreshes of ``name`` (its last one, and the durations the stall watchdog's median needs)."""
        try:
            return list(self.backend.history(name, RECENT_RUNS))
        except CatalogUnavailableError:
            raise
        except Exception:
            log.exception("reading the refresh history of %s failed", name)
            return []

    def _poll_progress(self, now: datetime) -> None:
        with self.lock:
            jobs = [
                job
                for job in self.state.running()
                if not job.cancelled
                and (job.progress_polled_at is None or now - job.progress_polled_at >= self.progress_every)
            ]
        for job in jobs:
            try:
                progress = self.backend.progress(job.request.job_group)
            except Exception:
                log.debug("progress of %s unavailable", job.request.job_group, exc_info=True)
                continue
            with self.lock:
                job.progress_polled_at = now
                if progress != job.progress and self.state.is_current(job):
                    job.progress = progress
                    self.state.publish(EventKind.REFRESH_PROGRESS, job.table, now)

    def _watch(self, now: datetime) -> None:
        """The stall watchdog's turn: flag stalled runs, give up on those past their limit (``watchdog``)."""
        with self.lock:
            result = watch(self.state, self.stall_policy, now)
            if result.abandoned:
                self.changed.notify_all()
        if result.abandoned and self._owns_executor and self._executor is not None:
            self._executor.shutdown(wait=False)  # its lost worker may never return: later runs get a new pool
            self._executor = None
        self._apply_if_any(result.effects)

    def recancel(self, now: datetime) -> None:
        """Cancel again the job groups of cancelled jobs that still run, every ``progress_every``.

        Spark cancels only the jobs a group has *at that moment*: a refresh cancelled while it plans (between
        its last cancellation check and the write job's submission) would otherwise run its write to the end.
        """
        groups = []
        with self.lock:
            for job in self.state.running():
                if not job.cancelled:
                    continue
                if job.cancelled_at is None:  # first seen: whoever cancelled it has just cancelled its group
                    job.cancelled_at = now
                elif now - job.cancelled_at >= self.progress_every:
                    job.cancelled_at = now
                    groups.append(job.request.job_group)
        self._cancel_groups(groups)

    def _checked_recently(self, entry: ScheduledTable, now: datetime) -> bool:
        """Discovery may list ``entry`` with its last answer: asked about within :meth:`recheck_every_for`, and not
        changed here since (a local ALTER makes the last answer older than what this process wrote)."""
        checked = self._checked.get(entry.name)
        return checked is not None and checked[1] == entry.table and now - checked[0] < self.recheck_every_for(entry)

    def recheck_every_for(self, entry: ScheduledTable) -> timedelta:
        """How often discovery asks the catalog about ``entry`` itself: every ``rediscover_every``, or every hundredth
        of its freshness where that is longer (a daily table's definition, changed by another process, is seen
        within 14.4 minutes; a discovery that asked about 500 idle daily tables every 30 s cost 7 CPU-seconds a
        minute between the kernel and the catalog server)."""
        return max(self.rediscover_every, entry.table.freshness / STALENESS_LAG_FRACTION)

    def staleness_every_for(self, entry: ScheduledTable) -> timedelta:
        """How often ``entry``'s staleness is polled: a fraction of its freshness, within the configured bounds."""
        scaled = max(entry.table.freshness / STALENESS_POLLS_PER_FRESHNESS, MIN_STALENESS_EVERY)
        return min(max(self.staleness_every, entry.table.freshness / STALENESS_LAG_FRACTION), scaled)

    def _poll_staleness(self, now: datetime) -> None:
        with self.lock:
            entries = [
                entry
                for entry in self.state.entries()
                if entry.pending_checked_at is None or now - entry.pending_checked_at >= self.staleness_every_for(entry)
            ]
        for entry in entries:
            if self.state.paused() or not self.poll_pending_since(entry):
                return

    def poll_pending_since(self, entry: ScheduledTable) -> bool:
        """Refresh the cached ``pending_since`` of ``entry``; False when the catalog is unreachable."""
        try:
            since = self.backend.pending_since(entry.name)
        except CatalogUnavailableError as exc:
            with self.lock:
                if not self.state.paused():
                    self.state.pause(str(exc), self.clock())
            return False
        except NoSuchSourceTableError as exc:
            with self.lock:
                now, held = self.clock(), entry.missing_source is not None
                entry.missing_source, entry.pending_checked_at = MissingSource(exc.source, str(exc)), now
                if not held:
                    message = f"{entry.name} waits for its source {exc.source}: no refresh until it exists again"
                    self.state.publish(EventKind.STATE_CHANGED, entry, now, message)
            return True
        except Exception:
            log.exception("reading the pending changes of %s failed", entry.name)
            return True
        with self.lock:
            now, missing = self.clock(), entry.missing_source
            if since != entry.pending_since or entry.pending_checked_at is None:
                self.state.changed()
            entry.pending_since, entry.pending_checked_at = since, now
            entry.missing_source = None
            if missing is not None:  # the held run, due already, starts in this pass
                self.state.publish(
                    EventKind.STATE_CHANGED, entry, now, f"{missing.source} exists again: {entry.name} refreshes"
                )
        return True

    def _start_due(self, now: datetime) -> list[RefreshRequest]:
        with self.lock:
            if self.stopping.is_set():
                return []
            jobs = [
                self.state.begin(entry, run, self._new_request(entry, run, now), now)
                for entry, run in self.state.select_due(now)
            ]
        for job in jobs:
            self._submit(job)
        return [job.request for job in jobs]

    def _new_request(self, entry: ScheduledTable, run: PendingRun, now: datetime) -> RefreshRequest:
        scheduled = run.scheduled_time or entry.schedule.latest_fire(run.due_at, now)
        group = f"{job_group_prefix(entry.name)}{next(self._job_numbers)}"
        return RefreshRequest(entry.name, run.trigger, scheduled, run.partition, entry.options, group)

    def _submit(self, job: RunningJob) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.state.max_jobs, thread_name_prefix="mt-refresh-job")
        try:
            handle = self._executor.submit(self._run_job, job)
        except RuntimeError as exc:  # shut down by a concurrent stop()
            with self.lock:
                self.state.cancel_job(job.request.table, "manager stopped", requeue=True)
            self._finish(job, None, exc)
            return
        handle.add_done_callback(lambda f: self._finish_if_cancelled(job, f))

    def _finish_if_cancelled(self, job: RunningJob, handle: Future[None]) -> None:
        """A job cancelled in the pool's queue (``shutdown(cancel_futures=True)``) never ran ``_run_job``."""
        if handle.cancelled():
            self._finish(job, None, RefreshCancelledError(f"refresh of {job.request.table} never started"))

    def _run_job(self, job: RunningJob) -> None:
        try:
            outcome = self.backend.refresh(job.request)
        except BaseException as exc:
            self._finish(job, None, exc)
            if not isinstance(exc, Exception):
                raise
        else:
            self._finish(job, outcome, None)

    def _finish(self, job: RunningJob, outcome: RefreshOutcome | None, error: BaseException | None) -> None:
        with self.lock:
            counted = error is None and not job.cancelled and self.state.is_current(job)
        if counted:  # before settling, so the success event carries the staleness after this commit
            self.poll_pending_since(job.table)
        with self.lock:
            effects = self.state.settle(job, outcome, error, self.clock())
            self.changed.notify_all()
        self.apply(effects)

    def shutdown_executor(self, wait: bool) -> None:
        """Shut the worker pool down if this runner made it (a later run makes a new one).

        Args:
            wait: join the worker threads (only when no job is still running, so this cannot block).
        """
        if self._owns_executor and self._executor is not None:
            self._executor.shutdown(wait=wait, cancel_futures=True)
            self._executor = None

    def apply(self, effects: Effects) -> None:
        """Do what a transition asked for, outside the lock: cancel job groups, resolve waiters, wake up."""
        self._cancel_groups(effects.cancel)
        for future, outcome, error in effects.settle:
            _settle(future, outcome, error)
        self.wake.set()

    def _apply_if_any(self, effects: Effects) -> None:
        """:meth:`apply` for a turn taken on every few steps: ``apply`` wakes the loop, so an empty one would make
        each such step run twice (the watchdog's every step: a core; the lease pass's: twice the idle work)."""
        if not effects.empty:
            self.apply(effects)

    def _cancel_groups(self, groups: list[str]) -> None:
        for group in groups:
            try:
                self.backend.cancel(group)
            except Exception:
                log.exception("cancelling job group %s failed", group)

    def dispatch_events(self) -> None:
        """Deliver queued events to subscribers, in order; a failing subscriber is logged and skipped."""
        with self._dispatch_lock:
            while True:
                with self.lock:
                    event = self.state.next_event()
                    if event is None:
                        self._dispatching = False
                        self.changed.notify_all()
                        return
                    subscribers = list(self.subscribers)
                    self._dispatching = True
                for callback in subscribers:
                    try:
                        callback(event)
                    except Exception:
                        log.exception("event subscriber %r failed on %s of %s", callback, event.kind, event.table)

    def seconds_to_next_wakeup(self) -> float:
        """How long the scheduler thread may wait: until a run, a discovery or a poll is due."""
        with self.lock:
            now = self.clock()
            times = [self.state.next_deadline(now)]
            times += [
                (job.progress_polled_at or now) + self.progress_every
                for job in self.state.running()
                if not job.cancelled
            ]
            times += [(job.cancelled_at or now) + self.progress_every for job in self.state.running() if job.cancelled]
            if not self.state.paused():
                times += [
                    entry.pending_checked_at + self.staleness_every_for(entry)
                    for entry in self.state.entries()
                    if entry.pending_checked_at is not None
                ]
        upcoming = [t for t in times if t is not None and t > now]
        return (min(upcoming) - now).total_seconds() if upcoming else self.rediscover_every.total_seconds()

    # -- what the manager asks of its runner ----------------------------------------------------------

    def wake_up(self) -> None:
        """Something may be due now: the scheduler thread steps at once instead of waiting out its timeout."""
        self.wake.set()

    def sleep_until_due(self) -> None:
        """The scheduler thread's wait between steps: until woken, or until a run, a discovery or a poll is due."""
        self.wake.wait(self.seconds_to_next_wakeup())
        self.wake.clear()

    def allow_running(self) -> None:
        """A (re)started manager's thread may loop."""
        self.stopping.clear()

    def request_stop(self) -> None:
        """The thread ends after its current step; :meth:`is_idle` no longer waits for due runs."""
        self.stopping.set()

    def stop_requested(self) -> bool:
        return self.stopping.is_set()

    def set_stall_policy(self, policy: StallPolicy) -> None:
        """A new stall policy, used from the next step (which starts now)."""
        with self.lock:
            self.stall_policy = policy
        self.wake.set()

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Deliver every event to ``callback`` from now on; returns the function that stops it."""
        subscribers = self.subscribers
        with self.lock:
            subscribers.append(callback)

        def unsubscribe() -> None:
            with self.lock:
                if callback in subscribers:
                    subscribers.remove(callback)

        return unsubscribe

    def wait_stopped(self, table: str, timeout: float) -> bool:
        """Wait (holding no lock) until a cancelled job's work on ``table`` has stopped."""
        return self.backend.wait_stopped(table, timeout)

    def wait_for_jobs(self, deadline: float) -> bool:
        """Wait until every (cancelled) job has ended, cancelling lingering ones again as the thread would.

        Args:
            deadline: a :func:`time.monotonic` time.
        """
        step = self.progress_every.total_seconds()
        while True:
            with self.changed:
                wait = min(max(deadline - time.monotonic(), 0), step)
                if self.changed.wait_for(lambda: not self.state.has_jobs(), wait):
                    return True
            if time.monotonic() >= deadline:
                return False
            self.recancel(self.clock())

    def wait_idle(self, timeout: float | None) -> bool:
        """Block until :meth:`is_idle` (``timeout`` seconds at most; ``None``: as long as it takes)."""
        with self.changed:
            return self.changed.wait_for(self.is_idle, timeout)

    def is_idle(self) -> bool:
        """Nothing runs, nothing is due now, every event was delivered (call holding the lock)."""
        if self._dispatching or self.state.has_jobs() or self.state.has_events():
            return False
        return self.stopping.is_set() or not self.state.select_due(self.clock())


def _settle(future: Future[RefreshOutcome], outcome: RefreshOutcome | None, error: BaseException | None) -> None:
    """Resolve a waiter unless it is already resolved (or was cancelled by its owner)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(outcome)  # type: ignore[arg-type]
    except InvalidStateError:
        pass
