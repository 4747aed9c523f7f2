"""``%mt`` / ``%mt list``: every materialized table in one live table, with the cards' badges."""

from __future__ import annotations

import ipywidgets as widgets

from mt_magic.runtime.status import RefreshEvent, TableStatus
from mt_magic.widgets.base import LiveView, ViewHost
from mt_magic.widgets.render import dashboard_html, dashboard_text

DASHBOARD_KEY = "%mt list"


class Dashboard(LiveView):
    """Re-rendered from the manager's statuses on every event and tick (one lock-protected read, no I/O)."""

    def __init__(self, live: ViewHost) -> None:
        self.statuses: list[TableStatus] = []
        self.table = widgets.HTML()
        super().__init__(live, DASHBOARD_KEY, [self.table])
        self.add_class("mt-dashboard")
        self.tick()

    def on_event(self, event: RefreshEvent) -> None:
        self.tick()

    def tick(self) -> None:
        statuses = self.live.feed.statuses()
        with self.lock:
            if not self.closed:
                self.statuses = statuses
                self.table.value = dashboard_html(statuses, self.live.clock())

    def fallback_html(self) -> str:
        return dashboard_html(self.statuses, self.live.clock())

    def fallback_text(self) -> str:
        return dashboard_text(self.statuses, self.live.clock())
