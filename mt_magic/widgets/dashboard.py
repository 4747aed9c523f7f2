"""``%mt`` / ``%mt list``: every materialized table in one live table, with the cards' badges, and which tables cost
the most refresh time an hour (from each table's recent refreshes, costliest first)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime, timedelta

import ipywidgets as widgets

from mt_magic.runtime.inspect.cost_history import observed_per_hour
from mt_magic.runtime.status import RefreshEvent, TableStatus
from mt_magic.runtime.workspace import human_duration
from mt_magic.widgets.base import LiveView, ViewHost
from mt_magic.widgets.render import dashboard_html, dashboard_text

DASHBOARD_KEY = "%mt list"
CELL = "text-align:left;padding:1px 10px 1px 0"
COSTLY = 0.1
"""A table spending more than this share of an hour refreshing is highlighted (besides the costliest)."""


def costs(statuses: Sequence[TableStatus], now: datetime) -> list[tuple[TableStatus, timedelta]]:
    """Each table with recent refreshes and the refresh time an hour they cost (``cost_history.observed_per_hour``
    over the manager's recent records of it), costliest first."""
    priced = [(s, observed_per_hour(s.recent, s.freshness, now)) for s in statuses]
    known = [(s, cost) for s, cost in priced if cost is not None]
    return sorted(known, key=lambda pair: (-pair[1], pair[0].name))


def _bar(cost: timedelta, most: timedelta) -> str:
    width = 120 * (cost / most) if most else 0.0
    return f'<span style="display:inline-block;height:8px;width:{width:.0f}px;background:#f59e0b"></span>'


def cost_html(statuses: Sequence[TableStatus], now: datetime) -> str:
    """The tables by refresh time an hour, costliest first; the costliest and any past :data:`COSTLY` of an hour
    highlighted."""
    ranked = costs(statuses, now)
    if not ranked:
        return ""
    most = ranked[0][1]
    rows = []
    for i, (s, cost) in enumerate(ranked):
        costly = i == 0 or cost > timedelta(hours=COSTLY)
        style = "background:#fef3c7;font-weight:bold" if costly else ""
        share = cost / timedelta(hours=1)
        rows.append(
            f'<tr class="mt-cost-row" data-table="{html.escape(s.name)}" data-costly="{str(costly).lower()}" '
            f'style="{style}"><td style="{CELL}">{html.escape(s.name)}</td>'
            f'<td style="{CELL}">{human_duration(cost)} an hour ({share:.1%})</td>'
            f'<td style="{CELL}">{_bar(cost, most)}</td><td style="{CELL}">{len(s.recent)} recent refresh(es)</td></tr>'
        )
    return (
        '<div class="mt-cost"><b>Refresh time an hour</b> (recent refreshes of each table, costliest first)'
        f'<table style="border-collapse:collapse">{"".join(rows)}</table></div>'
    )


def cost_text(statuses: Sequence[TableStatus], now: datetime) -> str:
    ranked = costs(statuses, now)
    if not ranked:
        return ""
    lines = [f"{s.name}: {human_duration(cost)} an hour" for s, cost in ranked]
    return "\n".join(["refresh time an hour, costliest first:", *lines])


class Dashboard(LiveView):
    """Re-rendered from the manager's statuses on every event and tick (one lock-protected read, no I/O)."""

    def __init__(self, live: ViewHost) -> None:
        self.statuses: list[TableStatus] = []
        self.table = widgets.HTML()
        self.cost = widgets.HTML()
        super().__init__(live, DASHBOARD_KEY, [self.table, self.cost])
        self.add_class("mt-dashboard")
        self.tick()

    def on_event(self, event: RefreshEvent) -> None:
        self.tick()

    def tick(self) -> None:
        statuses = self.live.feed.statuses()
        now = self.live.clock()
        with self.lock:
            if not self.closed:
                self.statuses = statuses
                self.table.value = dashboard_html(statuses, now)
                self.cost.value = cost_html(statuses, now)

    def fallback_html(self) -> str:
        now = self.live.clock()
        return dashboard_html(self.statuses, now) + cost_html(self.statuses, now)

    def fallback_text(self) -> str:
        now = self.live.clock()
        return "\n".join(t for t in (dashboard_text(self.statuses, now), cost_text(self.statuses, now)) if t)
