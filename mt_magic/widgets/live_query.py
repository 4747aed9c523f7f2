"""A live query: a query's result that re-runs itself when a table it reads commits, and says what it is as of.

Where the signals come from: the refresh manager's REFRESH_SUCCEEDED events for the materialized tables the
query reads (on the manager's thread: they only mark a change), and a poll of the catalog every
``poll_every`` for the rest (plain Iceberg sources, or tables refreshed by another process; metadata only).
When it runs: :class:`RerunSchedule` debounces — several commits within ``quiet`` of each other make one
re-run, which waits no longer than ``longest`` after the first — and never starts a second run while one is in
flight (a commit during a run makes one more run after it). Where it runs: on the live views' updater thread
(:class:`~mt_magic.widgets.live.LiveViews`, the thread that already reads the cards' previews with Spark), never
on the kernel's or the manager's thread. A failed re-run shows its error and keeps the last rows; the next
commit tries again. Pause stops re-runs (commits are still noted) until Resume; so does the manager's own pause
while the catalog cannot be reached.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from uuid import uuid4

import ipywidgets as widgets

from mt_magic.errors import first_line
from mt_magic.runtime.inspect.query import QueryResult
from mt_magic.runtime.status import EventKind, RefreshEvent, TableStatus
from mt_magic.widgets.base import LiveView, ViewHost
from mt_magic.widgets.live_query_render import (
    LiveQueryState,
    error_html,
    header_html,
    live_query_html,
    live_query_text,
    rows_html,
)

if TYPE_CHECKING:
    import pandas as pd

QUIET = timedelta(seconds=2)
LONGEST = timedelta(seconds=15)
POLL_EVERY = timedelta(seconds=10)


class QueryRunner(Protocol):
    """What a live query re-runs (:class:`mt_magic.runtime.inspect.query.QuerySource`)."""

    @property
    def tables(self) -> tuple[str, ...]:
        """The catalog's tables the query reads (fully qualified)."""
        ...

    def run(self) -> QueryResult:
        """Run the query now (Spark) at the tables' current snapshots."""
        ...

    def current_snapshots(self) -> dict[str, int | None]:
        """Each table's current snapshot id (catalog metadata only)."""
        ...


@dataclass
class RerunSchedule:
    """When to re-run: a debounce over commits plus "one run at a time". No I/O and no clock of its own; the
    view calls it under its lock with the clock's "now".

    Args:
        quiet: a run starts once no commit has arrived for this long…
        longest: …or this long after the first commit it answers, whichever comes first.
    """

    quiet: timedelta = QUIET
    longest: timedelta = LONGEST
    paused: bool = False
    running: bool = False
    first_change: datetime | None = None
    last_change: datetime | None = None
    changes: int = 0
    """Commits noted since the last run started."""

    def changed(self, at: datetime) -> None:
        """A table the query reads committed at ``at`` (or the user asked for a run)."""
        if self.first_change is None:
            self.first_change = at
        self.last_change = at if self.last_change is None else max(self.last_change, at)
        self.changes += 1

    def now(self, at: datetime) -> None:
        """Run as soon as nothing runs (the Re-run button): due at once."""
        self.changed(at)
        self.first_change = at - self.longest

    @property
    def waiting(self) -> bool:
        return self.first_change is not None

    def due_at(self) -> datetime | None:
        if self.first_change is None or self.last_change is None:
            return None
        return min(self.last_change + self.quiet, self.first_change + self.longest)

    def start(self, at: datetime) -> bool:
        """Whether a run starts at ``at``; if so it is marked running and the noted commits are its own."""
        due = self.due_at()
        if self.paused or self.running or due is None or at < due:
            return False
        self.running = True
        self.first_change = self.last_change = None
        self.changes = 0
        return True

    def finished(self) -> None:
        self.running = False


class LiveQuery(LiveView):
    """The live view of one query. Build it with :meth:`LiveViews.query` (``%%mtsql --live``, ``mt_magic.live``).

    Args:
        runner: runs the query; the view never touches Spark itself.
        first: the result of the run the cell made (the view opens with rows; errors were the cell's).
    """

    def __init__(
        self,
        live: ViewHost,
        runner: QueryRunner,
        first: QueryResult,
        *,
        quiet: timedelta = QUIET,
        longest: timedelta = LONGEST,
        poll_every: timedelta | None = POLL_EVERY,
    ) -> None:
        self.runner = runner
        self.result = first
        self.runs = 1
        """Runs that succeeded, the cell's own first."""
        self.attempts = 1
        """Runs that finished, failed ones too."""
        self.error: str | None = None
        self.schedule = RerunSchedule(quiet, longest)
        self.poll_every = poll_every
        self._last_poll = live.clock()
        self._polling = False
        self._ran = threading.Condition()
        self.header = widgets.HTML()
        self.header.add_class("mt-live-query-head")
        self.rows_area = widgets.HTML(rows_html(first))
        self.message = widgets.HTML()
        self.pause_button = widgets.ToggleButton(value=False, description="Pause", icon="pause")
        self.pause_button.add_class("mt-live-pause")
        self.pause_button.observe(self._paused, names="value")
        self.rerun_button = widgets.Button(description="Re-run now", icon="refresh")
        self.rerun_button.add_class("mt-live-rerun")
        self.rerun_button.on_click(lambda _: self.rerun_now())
        controls = widgets.HBox([self.pause_button, self.rerun_button])
        super().__init__(live, f"query:{uuid4().hex[:12]}", [self.header, controls, self.message, self.rows_area])
        self.add_class("mt-live-query")
        self.layout.border, self.layout.padding, self.layout.margin = "1px solid #d1d5db", "4px 10px", "4px 0"
        self.show()

    # -- what it shows -------------------------------------------------------------------------------

    @property
    def columns(self) -> tuple[str, ...]:
        return self.result.columns

    @property
    def rows(self) -> tuple[tuple[object, ...], ...]:
        return self.result.rows

    def to_pandas(self) -> pd.DataFrame:
        """The current rows as a pandas DataFrame (``attrs["as_of"]``: table → snapshot id)."""
        import pandas as pd

        with self.lock:
            result = self.result
        table = pd.DataFrame(list(result.rows), columns=list(result.columns))
        table.attrs["as_of"] = {s.table: s.snapshot_id for s in result.as_of}
        return table

    def state(self) -> LiveQueryState:
        with self.lock:
            s = self.schedule
            return LiveQueryState(self.runs, s.running, s.paused, s.waiting, self.error)

    def _statuses(self) -> dict[str, TableStatus]:
        tables = set(self.runner.tables)
        return {s.name: s for s in self.live.feed.statuses() if s.name in tables}

    def show(self) -> None:
        """Set the header and the error line from the current state (any thread: traits only). The manager's
        statuses are read before the view's lock is taken, never under it."""
        statuses, now = self._statuses(), self.live.clock()
        with self.lock:
            self.header.value = header_html(self.result, self.state(), statuses, now)
            self.message.value = error_html(self.error)

    # -- signals (manager thread: events; updater thread: ticks) ------------------------------------

    def on_event(self, event: RefreshEvent) -> None:
        if event.table not in self.runner.tables:
            return
        if event.kind is EventKind.REFRESH_SUCCEEDED and event.status is not None:
            last = event.status.last_refresh
            if last is not None and last.snapshot_id is not None and last.snapshot_id != self._read(event.table):
                with self.lock:
                    self.schedule.changed(event.at)
        elif event.kind is EventKind.TABLE_REMOVED:
            with self.lock:
                self.error = f"{event.table} was removed ({event.message or 'dropped'}); the rows are its last"
        self.show()

    def _read(self, table: str) -> int | None:
        with self.lock:
            return next((s.snapshot_id for s in self.result.as_of if s.table == table), None)

    def tick(self) -> None:
        """Start a due re-run or poll on the updater thread; refresh the relative times. While the manager pauses
        all work (the catalog cannot be reached) a due re-run waits too."""
        now = self.live.clock()
        paused = any(s.paused for s in self._statuses().values())
        with self.lock:
            start = not paused and self.schedule.start(now)
            poll = (
                not self._polling
                and self.poll_every is not None
                and bool(self.runner.tables)
                and now - self._last_poll >= self.poll_every
            )
            if poll:
                self._polling, self._last_poll = True, now
        if start:
            self.live.submit(self._rerun)
        if poll:
            self.live.submit(self._poll)
        self.show()

    def _poll(self) -> None:
        try:
            current = self.runner.current_snapshots()
        except Exception as exc:
            with self.lock:
                self._polling = False
                self.error = f"{type(exc).__name__}: {first_line(exc)}"
            self.show()
            return
        with self.lock:
            self._polling = False
            read = {s.table: s.snapshot_id for s in self.result.as_of}
            if any(read.get(table) != snapshot for table, snapshot in current.items()):
                self.schedule.changed(self.live.clock())
        self.show()

    def _rerun(self) -> None:
        if self.closed:
            return
        try:
            result: QueryResult | None = self.runner.run()
            error = None
        except Exception as exc:  # shown on the view, which stays subscribed; the next commit tries again
            result, error = None, f"{type(exc).__name__}: {first_line(exc)}"
        with self.lock:
            self.schedule.finished()
            self.attempts += 1
            self.error = error
            if result is not None:
                self.result = result
                self.runs += 1
                self.rows_area.value = rows_html(result)
        self.show()
        with self._ran:
            self._ran.notify_all()

    # -- controls (kernel thread: buttons) ------------------------------------------------------------

    def _paused(self, change: dict[str, Any]) -> None:
        with self.lock:
            self.schedule.paused = bool(change["new"])
        self.pause_button.description = "Resume" if change["new"] else "Pause"
        self.pause_button.icon = "play" if change["new"] else "pause"
        self.show()

    def pause(self) -> None:
        self.pause_button.value = True

    def resume(self) -> None:
        self.pause_button.value = False

    def rerun_now(self) -> None:
        """Re-run at the next tick (after the run in flight, if any), whatever committed."""
        with self.lock:
            self.schedule.now(self.live.clock())
        self.show()

    def wait_for_run(self, after: int, timeout: float = 120.0) -> bool:
        """Block until more than ``after`` runs finished (``attempts``: failed ones count), for notebooks and
        tests that must not depend on timing; False on timeout or when the view closed."""
        with self._ran:
            return self._ran.wait_for(lambda: self.attempts > after or self.closed, timeout) and not self.closed

    def close(self) -> None:
        """Unsubscribe and close (see :class:`LiveView`); a :meth:`wait_for_run` in progress returns False."""
        super().close()
        if "_ran" in self.__dict__:
            with self._ran:
                self._ran.notify_all()

    # -- fallbacks -------------------------------------------------------------------------------------

    def fallback_html(self) -> str:
        return live_query_html(self.result, self.state(), self._statuses(), self.live.clock())

    def fallback_text(self) -> str:
        return live_query_text(self.result, self.state(), self._statuses(), self.live.clock())
