"""In-memory stand-ins for testing anything built on the RefreshManager without Spark or a catalog.

- :class:`FakeClock`: a settable, timezone-aware clock.
- :class:`ManualExecutor`: runs submitted refreshes only when told (or inline), so tests decide exactly when
  each job executes and can assert on ordering without threads.
- :class:`FakeBackend`: a :class:`~mt_magic.runtime.manager.backend.RefreshBackend` with scripted outcomes and failures,
  refreshes that block until released or cancelled, an unreachable-catalog switch, and a log of calls.
- :class:`FakeLeaseStore`: the catalog's refresh-lease map with its compare-and-set, shared by managers that play
  several processes.
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from mt_magic.catalog.leases import Lease, LeaseConflictError, LeaseMap
from mt_magic.errors import CatalogUnavailableError, RefreshCancelledError
from mt_magic.runtime.status import JobProgress, ManagedTable, RefreshOutcome, RefreshRecord, RefreshRequest
from mt_magic.vocabulary import RefreshKind

T = TypeVar("T")
Scripted = RefreshOutcome | RefreshKind | BaseException

EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)


class FakeClock:
    """A clock that only moves when told to: ``clock()`` is now, ``advance()`` moves it forward."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta = timedelta(0), *, seconds: float = 0, minutes: float = 0) -> datetime:
        """Move forward by ``delta`` plus ``seconds`` and ``minutes``; returns the new time."""
        with self._lock:
            self._now += delta + timedelta(seconds=seconds, minutes=minutes)
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when


class ManualExecutor(Executor):
    """An executor that runs submitted calls only on :meth:`run_next` / :meth:`run_all` (or at once if ``inline``)."""

    def __init__(self, inline: bool = False) -> None:
        self.inline = inline
        self.queue: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._shutdown = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future: Future[T] = Future()
        self.queue.append((future, lambda: fn(*args, **kwargs)))
        if self.inline:
            self.run_all()
        return future

    def run_next(self) -> bool:
        """Run the oldest queued call; False if none was queued."""
        if not self.queue:
            return False
        future, call = self.queue.popleft()
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(call())
            except BaseException as exc:
                future.set_exception(exc)
        return True

    def run_all(self) -> int:
        """Run queued calls (including ones they submit) until none is left; returns how many ran."""
        count = 0
        while self.run_next():
            count += 1
        return count

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shutdown = True
        while cancel_futures and self.queue:
            self.queue.popleft()[0].cancel()


class FakeBackend:
    """A scriptable in-memory backend.

    Refreshes succeed with a FULL commit unless scripted otherwise with :meth:`script`. A commit updates the
    table's ``last_refresh_at``, clears its ``pending_since`` and prepends a history record, like the engine.

    Args:
        tables: the catalog's materialized tables.
        clock: the time of commits and history records (share it with the manager).
        block_timeout: seconds a blocked refresh waits before failing (so a broken test cannot hang).
    """

    def __init__(
        self,
        tables: Iterable[ManagedTable] = (),
        *,
        clock: Callable[[], datetime] | None = None,
        block_timeout: float = 10.0,
    ) -> None:
        self.clock = clock or FakeClock()
        self.tables: dict[str, ManagedTable] = {table.name: table for table in tables}
        self.pending: dict[str, datetime | None] = {}
        self.histories: dict[str, list[RefreshRecord]] = defaultdict(list)
        self.progress_by_group: dict[str, JobProgress] = {}
        self.unavailable: str | None = None
        """While set, every catalog call raises CatalogUnavailableError with this message."""
        self.refusal: BaseException | None = None
        """While set, every refresh is received and raises it (a refusal the engine repeats: an invalid table, a
        missing source)."""
        self.calls: list[tuple[str, str]] = []
        """``(method, argument)`` of every call, in order."""
        self.requests: list[RefreshRequest] = []
        self.cancelled: list[str] = []
        self.block_timeout = block_timeout
        self._scripts: dict[str, deque[Scripted]] = defaultdict(deque)
        self._blocked: set[str] = set()
        self._running: dict[str, RefreshRequest] = {}
        self._cond = threading.Condition()
        self._snapshot_ids = itertools.count(1)

    # -- test controls ---------------------------------------------------------------------------------

    def put(self, table: ManagedTable) -> None:
        """Create or replace a table in the fake catalog."""
        self.tables[table.name] = table

    def drop(self, name: str) -> None:
        self.tables.pop(name, None)

    def script(self, name: str, *results: Scripted) -> None:
        """Queue what the next refreshes of ``name`` do: an outcome, a kind (e.g. NOOP) or an exception."""
        self._scripts[name].extend(results)

    def block(self, name: str) -> None:
        """Make refreshes of ``name`` wait until :meth:`release` or until their job group is cancelled."""
        with self._cond:
            self._blocked.add(name)

    def release(self, name: str) -> None:
        with self._cond:
            self._blocked.discard(name)
            self._cond.notify_all()

    def wait_running(self, name: str, timeout: float = 5.0) -> RefreshRequest:
        """Wait until a refresh of ``name`` is executing; returns its request.

        Raises:
            TimeoutError: none started within ``timeout`` seconds.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: any(r.table == name for r in self._running.values()), timeout):
                raise TimeoutError(f"no refresh of {name} started within {timeout}s")
            return next(r for r in self._running.values() if r.table == name)

    def refreshed(self, name: str | None = None) -> list[RefreshRequest]:
        """The refresh requests received (of ``name`` only, if given), in order."""
        return [r for r in self.requests if name is None or r.table == name]

    def count(self, method: str, argument: str | None = None) -> int:
        """How many times ``method`` was called (with ``argument``, if given)."""
        return sum(1 for m, a in self.calls if m == method and (argument is None or a == argument))

    # -- RefreshBackend --------------------------------------------------------------------------------

    def discover(self, reuse: Collection[str] = frozenset()) -> Sequence[ManagedTable]:
        self._call("discover", "")
        return tuple(self.tables.values())

    def refresh(self, request: RefreshRequest) -> RefreshOutcome:
        self._call("refresh", request.table)
        with self._cond:
            self.requests.append(request)
            self._running[request.job_group] = request
            self._cond.notify_all()
        try:
            if self.refusal is not None:
                raise self.refusal
            self._wait_while_blocked(request)
            result = self._scripts[request.table].popleft() if self._scripts[request.table] else RefreshKind.FULL
            if isinstance(result, BaseException):
                raise result
            return self._commit(request, result)
        finally:
            with self._cond:
                self._running.pop(request.job_group, None)
                self._cond.notify_all()

    def cancel(self, job_group: str) -> None:
        with self._cond:
            self.calls.append(("cancel", job_group))
            self.cancelled.append(job_group)
            self._cond.notify_all()

    def wait_stopped(self, table: str, timeout: float) -> bool:
        with self._cond:
            self.calls.append(("wait_stopped", table))
        return True

    def pending_since(self, table: str) -> datetime | None:
        self._call("pending_since", table)
        return self.pending.get(table)

    def progress(self, job_group: str) -> JobProgress | None:
        self.calls.append(("progress", job_group))
        return self.progress_by_group.get(job_group)

    def history(self, table: str, limit: int = 50) -> Sequence[RefreshRecord]:
        self._call("history", table)
        return tuple(self.histories[table][:limit])

    # -- internals -------------------------------------------------------------------------------------

    def _call(self, method: str, argument: str) -> None:
        self.calls.append((method, argument))
        if self.unavailable is not None:
            raise CatalogUnavailableError(self.unavailable)

    def _wait_while_blocked(self, request: RefreshRequest) -> None:
        def settled() -> bool:
            return request.table not in self._blocked or request.job_group in self.cancelled

        with self._cond:
            if not self._cond.wait_for(settled, self.block_timeout):
                raise TimeoutError(f"refresh of {request.table} stayed blocked for {self.block_timeout}s")
            if request.job_group in self.cancelled:
                raise RefreshCancelledError(f"job group {request.job_group} was cancelled")

    def _commit(self, request: RefreshRequest, result: RefreshOutcome | RefreshKind) -> RefreshOutcome:
        now = self.clock()
        if isinstance(result, RefreshKind):
            committed = result is not RefreshKind.NOOP
            result = RefreshOutcome(
                result,
                next(self._snapshot_ids) if committed else None,
                10 if committed else 0,
                now if committed else None,
                f"fake {result.value}",
            )
        if result.kind is not RefreshKind.NOOP:
            table = self.tables.get(request.table)
            if table is not None:
                self.tables[request.table] = replace(table, last_refresh_at=now)
            self.pending[request.table] = None
            record = RefreshRecord(
                result.kind, request.trigger, now, timedelta(0), result.rows_written, result.snapshot_id
            )
            self.histories[request.table].insert(0, record)
        return result


class FakeLeaseStore:
    """An in-memory lease map with the catalog's compare-and-set: a write must name the version it read.

    Share one between managers to play several processes on one catalog; ``unavailable`` plays an outage.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = 0
        self._leases: dict[str, Lease] = {}
        self.writes = 0
        self.conflicts = 0
        self.unavailable: str | None = None

    def read(self) -> LeaseMap:
        with self._lock:
            self._check()
            return LeaseMap(self._version, dict(self._leases))

    def write(self, base: LeaseMap, leases: Mapping[str, Lease]) -> LeaseMap:
        with self._lock:
            self._check()
            if base.version != self._version:
                self.conflicts += 1
                raise LeaseConflictError(f"lease map version {self._version}, not {base.version}")
            self._version += 1
            self.writes += 1
            self._leases = dict(leases)
            return LeaseMap(self._version, dict(leases))

    def holders(self) -> dict[str, str]:
        with self._lock:
            return {name: lease.holder for name, lease in self._leases.items()}

    def _check(self) -> None:
        if self.unavailable is not None:
            raise CatalogUnavailableError(self.unavailable)
