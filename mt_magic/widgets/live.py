"""The kernel's live views: at most one card per table and one dashboard, and the one thread that ticks them.

:class:`LiveViews` lives on the extension instance. It owns the *updater* thread, which runs only while a
view is open: it loads previews (Spark, so never on the manager's thread) and ticks every view once per
``tick_every`` seconds, because staleness and "5s ago" change without any event. The thread waits on an
``Event`` with a timeout, stops when the last view closes, and is stopped by :meth:`LiveViews.close`
(extension unload). Views subscribe to the manager themselves and unsubscribe on ``close()``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from mt_magic.errors import NoSuchMaterializedTableError
from mt_magic.runtime.workspace import utc_now
from mt_magic.vocabulary import StatementAction
from mt_magic.widgets.actions import TableActions
from mt_magic.widgets.base import FallbackBundle, LiveView, StatusFeed
from mt_magic.widgets.card import TableCard
from mt_magic.widgets.cell_output import StatementOutput
from mt_magic.widgets.dashboard import DASHBOARD_KEY, Dashboard

if TYPE_CHECKING:
    from mt_magic.runtime.inspect.query import QueryResult
    from mt_magic.runtime.results import StatementResult
    from mt_magic.widgets.live_query import LiveQuery, QueryRunner

log = logging.getLogger(__name__)
V = TypeVar("V", bound=LiveView)

THREAD_NAME = "mt-live-views"


class LiveViews:
    """Registry and updater of the live views of one kernel.

    Args:
        feed: where the views read statuses and events (the service; the manager itself in tests).
        actions: what the cards' buttons call.
        clock: "now" for relative times (share the manager's clock in tests).
        preview_rows: how many rows a preview loads, read at each load (a traitlet of the magics).
        tick_every: seconds between ticks of the updater thread; ``None`` starts no thread (tests call
            :meth:`run_pending` and :meth:`tick` themselves).
    """

    def __init__(
        self,
        feed: StatusFeed,
        actions: TableActions,
        *,
        clock: Callable[[], datetime] = utc_now,
        preview_rows: Callable[[], int] = lambda: 100,
        tick_every: float | None = 1.0,
    ) -> None:
        self.feed = feed
        self.actions = actions
        self.clock = clock
        self.preview_rows = preview_rows
        self.tick_every = tick_every
        self._views: dict[str, LiveView] = {}
        self._shown: list[FallbackBundle] = []
        """Views displayed since the last cell's end (:meth:`finish_cell` updates their saved output)."""
        self._tasks: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._retired: list[threading.Thread] = []
        """Threads told to stop but not joined yet (the last view closed); :meth:`close` joins them."""
        self._stopping = threading.Event()
        """The current thread's own stop flag (a new thread gets a new one, so an old one cannot linger)."""

    # -- views -----------------------------------------------------------------------------------------

    def card(self, name: str) -> TableCard:
        """A new live card of ``name``; the previous card of that table (if any) is closed.

        Raises:
            NoSuchMaterializedTableError: the manager does not know ``name``.
        """
        self._replace(name)
        return self._register(TableCard(self, name))

    def dashboard(self) -> Dashboard:
        """A new live dashboard; the previous one (if any) is closed."""
        self._replace(DASHBOARD_KEY)
        return self._register(Dashboard(self))

    def statement_output(self, results: Sequence[StatementResult]) -> StatementOutput:
        """The messages of ``results`` and a card for each table they touched (dropped ones excepted)."""
        names = dict.fromkeys(t for r in results if r.action is not StatementAction.DROPPED for t in r.tables)
        cards = []
        for name in names:
            try:
                cards.append(self.card(name))
            except NoSuchMaterializedTableError:
                continue
        return StatementOutput(results, cards, self)

    def query(self, runner: QueryRunner, first: QueryResult, **options: Any) -> LiveQuery:
        """A new live query view of ``runner`` showing ``first`` (one per call: each cell has its own)."""
        from mt_magic.widgets.live_query import LiveQuery

        return self._register(LiveQuery(self, runner, first, **options))

    def shown(self, view: FallbackBundle) -> None:
        """Called when ``view`` is displayed (its ``_ipython_display_``)."""
        with self._lock:
            self._shown.append(view)

    def finish_cell(self, *_: object) -> None:
        """At a cell's end (IPython's ``post_run_cell``, on the kernel's main thread, inside the cell's
        execution): the views displayed in the cell settle (each card's preview of its current snapshot loaded),
        then their saved output is updated to what they show now, so nbconvert and a saved notebook carry it.
        Views of earlier cells are left to their own updates (no Spark at every cell's end)."""
        with self._lock:
            shown, self._shown = self._shown, []
        for displayed in shown:
            try:
                displayed.settle()
            except Exception:
                log.exception("settling a view at the cell's end failed")
            displayed.republish()

    @property
    def views(self) -> tuple[LiveView, ...]:
        with self._lock:
            return tuple(self._views.values())

    def _replace(self, key: str) -> None:
        with self._lock:
            previous = self._views.get(key)
        if previous is not None:
            previous.close()

    def _register(self, view: V) -> V:
        with self._lock:
            self._views[view.key] = view
        self._start()
        return view

    def forget(self, view: LiveView) -> None:
        """Called by a closing view; the updater thread stops with the last one."""
        with self._lock:
            if self._views.get(view.key) is view:
                del self._views[view.key]
            last = not self._views
        if last:
            self._stop(timeout=None)

    def close(self) -> None:
        """Close every view and stop the updater thread (extension unload)."""
        for view in self.views:
            view.close()
        self._stop()

    # -- updater thread --------------------------------------------------------------------------------

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task`` on the updater thread (or at the next :meth:`run_pending` without one)."""
        with self._lock:
            self._tasks.append(task)
        self._wake.set()

    def run_pending(self) -> int:
        """Run the queued tasks now, on this thread; returns how many ran."""
        count = 0
        while True:
            with self._lock:
                if not self._tasks:
                    return count
                task = self._tasks.popleft()
            try:
                task()
            except Exception:
                log.exception("live view task failed")
            count += 1

    def tick(self) -> None:
        """Let every open view re-read its status (staleness and relative times move by themselves)."""
        for view in self.views:
            try:
                view.tick()
            except Exception:
                log.exception("ticking %s failed", view.key)

    @property
    def running(self) -> bool:
        """Whether an updater thread is alive (including one that was told to stop and is ending)."""
        with self._lock:
            threads = [t for t in (self._thread, *self._retired) if t is not None]
        return any(t.is_alive() for t in threads)

    def _start(self) -> None:
        with self._lock:
            if self.tick_every is None or (self._thread is not None and self._thread.is_alive()):
                return
            self._stopping = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stopping,), name=THREAD_NAME, daemon=True)
            self._thread.start()

    def _stop(self, timeout: float | None = 5.0) -> None:
        """Tell the updater thread to end; join it for ``timeout`` seconds (``None``: do not wait)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopping.set()
            self._tasks.clear()
            if thread is not None:
                self._retired.append(thread)
            self._retired = [t for t in self._retired if t.is_alive()]
            retired = list(self._retired)
        self._wake.set()
        if timeout is None:
            return
        deadline = time.monotonic() + timeout
        for old in retired:
            if old is not threading.current_thread():
                old.join(max(deadline - time.monotonic(), 0))

    def _run(self, stopping: threading.Event) -> None:
        assert self.tick_every is not None
        while not stopping.is_set():
            self.run_pending()
            if stopping.is_set():
                return
            self.tick()
            self._wake.wait(self.tick_every)
            self._wake.clear()
