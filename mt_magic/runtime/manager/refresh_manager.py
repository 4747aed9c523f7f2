"""The RefreshManager: one scheduler thread per kernel that keeps every materialized table fresh.

It decides *when* (schedules, coalescing, upstream order, retries) and asks a
:class:`~mt_magic.runtime.manager.backend.RefreshBackend` to do the work on a small worker pool. Everything it needs
is rediscovered from the catalog on :meth:`RefreshManager.start`, so a new kernel or the headless runner
resumes where another left off. One scheduling pass is :meth:`RefreshManager.step`: the thread calls it in a
loop; tests call it directly with a fake clock and a manual executor.
"""

from __future__ import annotations

import atexit
import logging
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor, Future
from datetime import datetime, timedelta

from mt_magic.errors import RefreshCancelledError
from mt_magic.runtime.manager.backend import RefreshBackend
from mt_magic.runtime.manager.lease_keeper import LeaseKeeper
from mt_magic.runtime.manager.lease_pass import release
from mt_magic.runtime.manager.loop import RefreshRunner, Subscriber
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.manager.state import Effects, SchedulerState
from mt_magic.runtime.manager.tracked import CascadeGroup, PendingRun
from mt_magic.runtime.manager.watchdog import StallPolicy
from mt_magic.runtime.status import ManagedTable, RefreshOutcome, RefreshRecord, RefreshRequest, TableStatus
from mt_magic.runtime.workspace import utc_now
from mt_magic.vocabulary import RefreshTrigger

__all__ = ["RefreshManager", "RetryPolicy"]

log = logging.getLogger(__name__)

Pairs = Mapping[str, str] | Iterable[tuple[str, str]]

DEFAULT_RETRY = RetryPolicy()
DEFAULT_REDISCOVER_EVERY = timedelta(seconds=30)
DEFAULT_PROGRESS_EVERY = timedelta(seconds=1)
DEFAULT_STALENESS_EVERY = timedelta(seconds=5)


def _pairs(values: Pairs) -> tuple[tuple[str, str], ...]:
    items = values.items() if isinstance(values, Mapping) else values
    return tuple((str(key), str(value)) for key, value in items)


class RefreshManager:
    """Keeps every materialized table within its freshness, from one scheduler thread and a worker pool.

    Construction starts nothing; :meth:`start` discovers the catalog's tables and starts the thread. Control
    calls are thread-safe, take effect at once and wake the thread. Either call :meth:`start` or drive
    :meth:`step` yourself (tests), not both.

    Args:
        backend: does the refreshes and reads the catalog.
        clock: timezone-aware "now"; injected so schedules are tested without sleeping.
        max_concurrent_jobs: cap on refreshes running at once (also the worker pool size).
        retry: backoff for failed refreshes and for an unreachable catalog.
        rediscover_every: how often the catalog is listed again (tables created or dropped elsewhere).
        progress_every: how often a running job's progress is polled.
        staleness_every: how often each table's ``pending_since`` is polled.
        rng: source of retry jitter; seeded in tests.
        executor: runs ``backend.refresh``; by default a ``ThreadPoolExecutor(max_concurrent_jobs)`` made on
            first use and shut down by :meth:`stop`.
        leases: one refresher per table (:mod:`.lease`): runs start only for tables whose lease in the catalog
            this manager holds; ``None`` refreshes every table it tracks. Only with ``scheduling``.
        scheduling: ``False`` makes an *inline* manager (no thread: scripts, tests, ``start_manager=False``):
            only requested refreshes and their cascades run, each within :meth:`step`, with no schedules,
            catch-ups or discovery of its own — the same refresh path without the background.
        stall_policy: when a running refresh is flagged STALLED and when it is given up on (:mod:`.watchdog`).

    Raises:
        ValueError: ``max_concurrent_jobs`` is below 1.
    """

    def __init__(
        self,
        backend: RefreshBackend,
        *,
        clock: Callable[[], datetime] = utc_now,
        max_concurrent_jobs: int = 2,
        retry: RetryPolicy = DEFAULT_RETRY,
        rediscover_every: timedelta = DEFAULT_REDISCOVER_EVERY,
        progress_every: timedelta = DEFAULT_PROGRESS_EVERY,
        staleness_every: timedelta = DEFAULT_STALENESS_EVERY,
        rng: random.Random | None = None,
        executor: Executor | None = None,
        scheduling: bool = True,
        leases: LeaseKeeper | None = None,
        stall_policy: StallPolicy | None = None,
    ) -> None:
        if max_concurrent_jobs < 1:
            raise ValueError(f"max_concurrent_jobs must be at least 1, got {max_concurrent_jobs}")
        if leases is not None and not scheduling:
            raise ValueError("leases need a scheduling manager (an inline manager refreshes only when asked)")
        self._state = SchedulerState(
            retry,
            rng if rng is not None else random.Random(),
            max_concurrent_jobs,
            scheduling=scheduling,
            leases=leases,
        )
        self._lock = threading.RLock()
        self._runner = RefreshRunner(
            backend,
            self._state,
            self._lock,
            clock,
            executor=executor,
            rediscover_every=rediscover_every,
            progress_every=progress_every,
            staleness_every=staleness_every,
            stall_policy=stall_policy,
        )
        self._clock = clock
        self._lifecycle = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pool_hook_registered = False

    # -- lifecycle -------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the scheduler thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def paused(self) -> bool:
        """Whether work is paused because the catalog cannot be reached."""
        return self._state.paused()

    @property
    def lease_holder(self) -> str | None:
        """This manager's name in the catalog's lease map (``None``: leasing is off)."""
        return self._state.lease_holder()

    @property
    def stall_policy(self) -> StallPolicy:
        """When a running refresh is flagged STALLED and when it is given up on (:mod:`.watchdog`)."""
        return self._runner.stall_policy

    @stall_policy.setter
    def stall_policy(self, policy: StallPolicy) -> None:
        self._runner.set_stall_policy(policy)

    @property
    def pause_reason(self) -> str | None:
        """The catalog error that paused work; ``None`` when not paused."""
        return self._state.pause_reason

    def start(self) -> None:
        """Discover the catalog's tables, then start the scheduler thread; does nothing if already started.

        An unreachable catalog does not raise: work pauses and discovery is retried with backoff.
        """
        with self._lifecycle:
            if self._thread is not None:
                return
            self._runner.allow_running()
            now = self._clock()
            if self._runner.discovery_due(now):
                self._runner.discover(now)
            self._thread = threading.Thread(target=self._run_loop, name="mt-refresh-manager", daemon=True)
            self._thread.start()
            self._register_exit_hooks()

    def stop(self, timeout: float = 10.0) -> bool:
        """Cancel running refreshes (they run again after a restart), end the thread and the worker pool.

        Idempotent. Waiters on ``refresh_now`` futures get :class:`RefreshCancelledError`; events still
        queued are delivered on the calling thread.

        Args:
            timeout: seconds to wait, in total, for the thread and the cancelled jobs to end.

        Returns:
            True if everything ended within ``timeout``.
        """
        with self._lifecycle:
            deadline = time.monotonic() + timeout
            with self._lock:
                thread, self._thread = self._thread, None
                if thread is None and not self._state.has_jobs():
                    release(self._state)
                    return True
                self._runner.request_stop()
                effects = self._state.cancel_jobs("manager stopped", requeue=True)
                effects.fail(self._state.detach_waiters(), RefreshCancelledError("the refresh manager stopped"))
            self._runner.apply(effects)
            if thread is not None:
                thread.join(max(deadline - time.monotonic(), 0))
                atexit.unregister(self._stop_at_exit)
            ended = self._runner.wait_for_jobs(deadline)
            self._runner.shutdown_executor(wait=ended)
            release(self._state)
            self._runner.dispatch_events()
            return ended and (thread is None or not thread.is_alive())

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing runs, nothing is due now, and every event has been delivered.

        Args:
            timeout: seconds to wait at most; ``None`` waits as long as it takes.

        Returns:
            True if idle, False if ``timeout`` passed first.
        """
        return self._runner.wait_idle(timeout)

    def _register_exit_hooks(self) -> None:
        atexit.register(self._stop_at_exit)
        if self._pool_hook_registered:
            return
        # Interpreter exit joins ThreadPoolExecutor workers (threading's exit hooks) *before* atexit runs, so a
        # running refresh would block exit; this hook runs first and cancels it. Private API, hence optional.
        # It cannot be unregistered, so it holds the manager weakly: %unload_ext + %load_ext must not leak one.
        register = getattr(threading, "_register_atexit", None)
        if register is not None:
            stop_at_exit = weakref.WeakMethod(self._stop_at_exit)

            def hook() -> None:
                method = stop_at_exit()
                if method is not None:
                    method()

            try:
                register(hook)
            except RuntimeError:  # already shutting down
                pass
        self._pool_hook_registered = True

    def _stop_at_exit(self) -> None:
        if self._thread is not None:
            self.stop(timeout=5.0)

    def _run_loop(self) -> None:
        while not self._runner.stop_requested():
            try:
                self.step()
            except Exception:
                log.exception("refresh manager step failed; continuing")
            self._runner.sleep_until_due()

    # -- control ---------------------------------------------------------------------------------------

    def refresh_now(
        self, name: str, partition: Pairs = (), cascade: bool = False, trigger: RefreshTrigger = RefreshTrigger.MANUAL
    ) -> Future[RefreshOutcome]:
        """Refresh a table now, even if suspended or backing off; a request during a run follows it once.

        Args:
            name: fully qualified table name.
            partition: ``PARTITION (k = 'v')`` of a backfill; empty for the whole table.
            cascade: afterwards refresh every downstream table, upstream first, each with the partition where it
                is partitioned by the same columns (:func:`~mt_magic.runtime.graph.cascaded_partition`).
            trigger: recorded with the refresh.

        Returns:
            A future of this table's outcome, which with ``cascade`` completes only once the whole cascade has;
            it raises the first error of the refreshes it waits for, or RefreshCancelledError.

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        future: Future[RefreshOutcome] = Future()
        run = PendingRun(trigger, self._clock(), self._clock(), _pairs(partition), cascade, True, [future])
        if cascade:
            group = CascadeGroup()
            group.track(future)
            run.groups.append(group)
        with self._lock:
            entry, now = self._state.table(name), self._clock()
            entry.request(run)
            self._state.changed()
            self._state.note_state(entry, now)
            if not self._state.may_run(name, now):
                self._state.want_leases_now()  # ask whoever holds it to hand it over, now
        self._runner.wake_up()
        return run.groups[0].future if cascade else future

    def suspend(self, name: str) -> None:
        """Stop refreshing ``name``: cancel its running job (nothing counts) and drop its pending runs.

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        with self._lock:
            effects = self._state.suspend(self._state.table(name), self._clock(), "suspended")
        self._runner.apply(effects)

    def cancel(self, name: str, reason: str = "cancelled by the user") -> bool:
        """Cancel ``name``'s running refresh: nothing commits, its waiters get RefreshCancelledError, and its
        schedule goes on (the next run comes as usual; nothing counts as a failure).

        Returns:
            Whether a refresh was running (and is now cancelled).

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        with self._lock:
            self._state.table(name)
            group = self._state.cancel_job(name, reason, requeue=False)
        effects = Effects()
        effects.cancel_group(group)
        self._runner.apply(effects)
        return group is not None

    def resume(self, name: str, options: Pairs = ()) -> None:
        """Schedule ``name`` again; ``options`` reach every run of this resumption (``RefreshRequest.options``).

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        with self._lock:
            self._state.resume(self._state.table(name), _pairs(options), self._clock())
        self._runner.wake_up()

    def remove(self, name: str, reason: str = "dropped", wait: float = 0.0) -> None:
        """Forget a dropped (or renamed) table: cancel its running job, fail its pending runs' waiters.

        Args:
            wait: seconds to wait (outside the lock) until the cancelled job's work has stopped, so the caller
                can purge or move the table's files; 0 returns at once.

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        with self._lock:
            self._state.table(name)
            effects = self._state.remove(name, self._clock(), reason)
        self._runner.apply(effects)
        if wait > 0:
            self._runner.wait_stopped(name, wait)

    def upsert(self, table: ManagedTable) -> None:
        """Adopt a new or changed definition (ALTER AS, freshness, suspended); a running job starts over.

        Raises:
            ValueError: the table's cron or freshness is invalid.
        """
        with self._lock:
            now, entry = self._clock(), self._state.find(table.name)
            if entry is None:
                self._state.insert(table, None, now)
                effects = Effects()
            else:
                effects = self._state.redefine(entry, table, now, local=True)
        self._runner.apply(effects)

    def add(self, table: ManagedTable, initial: bool = True) -> Future[RefreshOutcome] | None:
        """Track a table just created; with ``initial`` its first (INITIAL) refresh is due at once.

        Returns:
            With ``initial``, a future of that first refresh's outcome (it raises its error); else ``None``.

        Raises:
            ValueError: the table's cron or freshness is invalid.
        """
        self.upsert(table)
        if not initial:
            return None
        future: Future[RefreshOutcome] = Future()
        with self._lock:
            entry, now = self._state.table(table.name), self._clock()
            entry.request(PendingRun(RefreshTrigger.INITIAL, now, now, futures=[future]))
            self._state.changed()
            self._state.note_state(entry, now)
            if not self._state.may_run(table.name, now):
                self._state.want_leases_now()  # its lease is taken at the next step, not at the next turn
        self._runner.wake_up()
        return future

    # -- status and events -----------------------------------------------------------------------------

    def status(self, name: str) -> TableStatus:
        """An immutable snapshot of ``name``'s state (no backend call).

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        with self._lock:
            return self._state.snapshot(self._state.table(name), self._clock())

    def version(self) -> int:
        """A number that grows with every change a status could show (events, pending changes, requests); equal
        numbers: every status reads as before, but for what moves with the clock (staleness, relative times)."""
        return self._state.version

    def knows(self, name: str) -> bool:
        """Whether the manager tracks ``name``."""
        with self._lock:
            return self._state.knows(name)

    def failures(self, name: str) -> list[RefreshRecord]:
        """The latest failed refreshes of ``name`` in this process, newest first.

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        with self._lock:
            return self._state.table(name).latest_failures()

    def statuses(self, names: Iterable[str] | None = None) -> list[TableStatus]:
        """Immutable snapshots of every known table (of those among ``names``, when given: a listing of one
        namespace costs its tables, not the catalog's), sorted by name."""
        with self._lock:
            return self._state.snapshots(self._clock(), names)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with every event, in order, on the manager's thread.

        A callback that raises is logged and skipped; it never stops the manager.

        Returns:
            A function that unsubscribes ``callback``.
        """
        return self._runner.subscribe(callback)

    # -- one scheduling pass ---------------------------------------------------------------------------

    def step(self) -> list[RefreshRequest]:
        """One scheduling pass at ``clock()``: discovery if due, progress and staleness polls, then start
        every due run (an inline executor finishes runs within the pass, so it repeats while runs start).

        Returns:
            The requests started, in start order.
        """
        return self._runner.step()
