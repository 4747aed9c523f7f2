"""The live card of one materialized table: state, freshness badge, progress, preview, and its controls.

Kept current by the manager's events (manager thread) and the updater's ticks (staleness and relative times
move without events); both only set traits. A tick costs nothing while nothing the card shows changes: it reads the
status again only when the manager's version moved or a time it shows is due to read differently
(:func:`~mt_magic.widgets.badges.redraw_due`: once a minute for a table refreshed hours ago). Buttons run on the
kernel's main thread and call :class:`~mt_magic.widgets.actions.TableActions`. The preview is read off the manager's
thread, on the updater thread, after each committed refresh.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import datetime

import ipywidgets as widgets

from mt_magic.errors import NoSuchMaterializedTableError, first_line
from mt_magic.runtime.spark.preview import Preview
from mt_magic.runtime.status import EventKind, RefreshEvent, TableStatus
from mt_magic.sql.ddl.parser import parse_partition
from mt_magic.sql.ddl.statements import Freshness, FreshnessUnit
from mt_magic.vocabulary import JobState, RefreshKind
from mt_magic.widgets.airflow_run import airflow_html, airflow_rows, airflow_text
from mt_magic.widgets.badges import freshness_badge, redraw_due
from mt_magic.widgets.base import LiveView, ViewHost
from mt_magic.widgets.history_chart import history_svg
from mt_magic.widgets.render import card_html, card_text, details_html, error_html, preview_html, title_html

UNITS = [u.value for u in FreshnessUnit]


def _split_freshness(status: TableStatus) -> tuple[int, str]:
    seconds = int(status.freshness.total_seconds())
    for unit in reversed(FreshnessUnit):
        if seconds and seconds % unit.seconds == 0:
            return seconds // unit.seconds, unit.value
    return max(seconds, 1), FreshnessUnit.SECOND.value


def _button(description: str, icon: str, css: str, on_click: Callable[[], None]) -> widgets.Button:
    button = widgets.Button(description=description, icon=icon, layout=widgets.Layout(width="auto"))
    button.add_class(css)
    button.on_click(lambda _: on_click())
    return button


def _chart_html(status: TableStatus) -> str:
    svg = history_svg(status.recent, status.freshness)
    return f'<div class="mt-card-chart">{svg}</div>' if svg else ""


class TableCard(LiveView):
    """The card of table ``name`` (fully qualified). Build it with :meth:`LiveViews.card`."""

    removed = False
    """Whether the table is gone (dropped, or unknown to the manager): the card shows why, its buttons off."""

    def __init__(self, live: ViewHost, name: str) -> None:
        self.name = name
        self.status: TableStatus = live.feed.status(name)
        self.preview: Preview | None = None
        self._shown_state: tuple[object, ...] = ()
        self._seen_version: int | None = None
        """The feed's version when the status shown was read (``None``: read at the next tick)."""
        self._due: datetime | None = None
        """When the status shown would read differently by the clock alone (``None``: never)."""
        self._on_change: list[Callable[[TableCard], object]] = []
        self.title = widgets.HTML()
        self.details = widgets.HTML()
        self.airflow = widgets.HTML()  # Airflow's last run, log link, next run (tables on Airflow)
        self.progress = widgets.FloatProgress(
            min=0.0, max=1.0, description="Spark", layout=widgets.Layout(display="none", width="60%")
        )
        self.preview_area = widgets.HTML(preview_html(None))
        self.chart = widgets.HTML()  # the recent refreshes (history_chart): duration by strategy, rows, staleness
        self.chart.add_class("mt-card-chart")
        self._charted: tuple[object, ...] | None = None
        self.message = widgets.HTML()
        self.message.add_class("mt-action-message")
        value, unit = _split_freshness(self.status)
        self.freshness_value = widgets.BoundedIntText(
            value=value, min=1, max=1_000_000, layout=widgets.Layout(width="80px")
        )
        self.freshness_unit = widgets.Dropdown(options=UNITS, value=unit, layout=widgets.Layout(width="100px"))
        self.partition = widgets.Text(
            placeholder="ds = '20250101' (empty: whole table)", layout=widgets.Layout(width="240px")
        )
        self.cascade = widgets.Checkbox(
            value=False, description="cascade downstream", indent=False, layout=widgets.Layout(width="auto")
        )
        self.refresh_button = _button("Refresh now", "refresh", "mt-refresh", self.refresh_now)
        self.suspend_button = _button("Suspend", "pause", "mt-suspend", self.toggle_suspend)
        self.cancel_button = _button("Cancel refresh", "stop", "mt-cancel", self.cancel_refresh)
        self.cancel_button.layout.display = "none"
        self.freshness_button = _button("Set freshness", "clock-o", "mt-set-freshness", self.set_freshness)
        self.backfill_button = _button("Backfill", "history", "mt-backfill", self.backfill)
        controls = widgets.HBox(
            [
                self.refresh_button,
                self.cancel_button,
                self.suspend_button,
                widgets.HTML("&nbsp;freshness"),
                self.freshness_value,
                self.freshness_unit,
                self.freshness_button,
            ]
        )
        backfill = widgets.HBox([widgets.HTML("partition"), self.partition, self.cascade, self.backfill_button])
        super().__init__(
            live,
            name,
            [
                self.title,
                self.details,
                self.airflow,
                self.progress,
                self.preview_area,
                self.chart,
                controls,
                backfill,
                self.message,
            ],
        )
        self.add_class("mt-card")
        self.layout.border, self.layout.padding, self.layout.margin = "1px solid #d1d5db", "4px 10px", "4px 0"
        self.tick()
        self.request_preview()

    # -- updates (manager thread / updater thread) ---------------------------------------------------

    def on_event(self, event: RefreshEvent) -> None:
        if event.table != self.name:
            return
        if event.kind is EventKind.TABLE_REMOVED or event.status is None:
            self.show_removed(event.message or "dropped")
            return
        self.apply(event.status)
        last = event.status.last_refresh
        if (
            event.kind is EventKind.REFRESH_SUCCEEDED
            and last is not None
            and last.kind is not RefreshKind.NOOP
            and (last.snapshot_id is None or self.preview is None or self.preview.snapshot_id != last.snapshot_id)
        ):
            self.request_preview()

    def tick(self) -> None:
        """Show the status again if the manager changed something or a time shown is due; else nothing."""
        version = self.live.feed.version()
        due = self._due
        if version == self._seen_version and (due is None or self.live.clock() < due):
            return
        try:
            status = self.live.feed.status(self.name)
        except NoSuchMaterializedTableError:
            self.show_removed("no longer known to the refresh manager")
            return
        self._seen_version = version
        self.apply(status)

    def when_changed(self, callback: Callable[[TableCard], object]) -> None:
        """Call ``callback`` (any thread) when what the saved card shows changes (state, badge, rows)."""
        self._on_change.append(callback)

    def saved_state(self) -> tuple[object, ...]:
        """What the saved card's fallbacks must follow; relative times alone do not count (they move by ticks)."""
        status, preview, last = self.status, self.preview, self.status.last_refresh
        return (
            status.state,
            freshness_badge(status).level,
            None if last is None else (last.started_at, last.snapshot_id),
            status.last_error,
            status.stall is None,
            status.paused,
            None if preview is None else preview.snapshot_id,
            self.details.value if self.removed else None,
        )

    def _changed(self) -> None:
        state = self.saved_state()
        with self.lock:
            if state == self._shown_state:
                return
            self._shown_state = state
        self.republish()
        for callback in self._on_change:
            callback(self)

    def settle(self) -> None:
        """At the cell's end: the preview of the current snapshot loaded now, if the card shows another."""
        last = self.status.last_refresh
        if self.closed or self.removed:
            return
        if self.preview is None or (
            last is not None and last.snapshot_id is not None and self.preview.snapshot_id != last.snapshot_id
        ):
            self.load_preview()
        self._changed()

    def apply(self, status: TableStatus) -> None:
        """Show ``status``: title with badges, details, progress bar, the Suspend/Resume label."""
        with self.lock:
            if self.closed:
                return
            self.status = status
            now = self.live.clock()
            self.title.value = title_html(status)
            self.details.value = details_html(status, now)
            self.airflow.value = airflow_html(airflow_rows(self.live.feed, status))
            running = status.state is JobState.RUNNING
            self.progress.layout.display = "flex" if running else "none"
            fraction = status.progress.fraction if running and status.progress else 0.0
            self.progress.value = fraction
            self.progress.bar_style = ("danger" if status.stall is not None else "info") if running else ""
            self.cancel_button.layout.display = "flex" if running else "none"
            suspended = status.state is JobState.SUSPENDED
            self.suspend_button.description = "Resume" if suspended else "Suspend"
            self.suspend_button.icon = "play" if suspended else "pause"
            self._chart(status)
            self._due = redraw_due(status, now)
        self._changed()

    def _chart(self, status: TableStatus) -> None:
        """The chart of the manager's recent refreshes of the table, redrawn only when they or the target change."""
        if (status.recent, status.freshness) == self._charted:
            return
        self._charted = (status.recent, status.freshness)
        self.chart.value = _chart_html(status)

    def show_removed(self, reason: str) -> None:
        with self.lock:
            if self.closed:
                return
            self.details.value = (
                f'<div class="mt-removed" style="color:#dc2626">{html.escape(self.name)}: {html.escape(reason)}</div>'
            )
            self.removed = True
            for button in (
                self.refresh_button,
                self.cancel_button,
                self.suspend_button,
                self.freshness_button,
                self.backfill_button,
            ):
                button.disabled = True
        self._changed()

    def request_preview(self) -> None:
        """Load the preview on the updater thread (never on the manager's)."""
        self.live.submit(self.load_preview)

    def load_preview(self) -> None:
        if self.closed:
            return
        try:
            preview = self.live.actions.preview(self.name, self.live.preview_rows())
        except Exception as exc:  # shown on the card; the next refresh tries again
            text = f"preview unavailable: {type(exc).__name__}: {first_line(exc)}"
            self.preview_area.value = f'<div class="mt-preview" style="color:#dc2626">{html.escape(text)}</div>'
            return
        with self.lock:
            if self.closed:
                return
            self.preview = preview
            self.preview_area.value = preview_html(preview)
        self._changed()

    # -- controls (kernel main thread) ----------------------------------------------------------------

    def refresh_now(self) -> None:
        self._act(lambda: self.live.actions.refresh(self.name))

    def cancel_refresh(self) -> None:
        self._act(lambda: self.live.actions.cancel(self.name))

    def toggle_suspend(self) -> None:
        actions = self.live.actions
        if self.status.state is JobState.SUSPENDED:
            self._act(lambda: actions.resume(self.name))
        else:
            self._act(lambda: actions.suspend(self.name))

    def set_freshness(self) -> None:
        freshness = Freshness(int(self.freshness_value.value), FreshnessUnit(self.freshness_unit.value))
        self._act(lambda: self.live.actions.set_freshness(self.name, freshness))

    def backfill(self) -> None:
        def run() -> str:
            text = self.partition.value.strip()
            return self.live.actions.refresh(self.name, parse_partition(text) if text else (), self.cascade.value)

        self._act(run)

    def _act(self, action: Callable[[], str]) -> None:
        try:
            message = action()
        except Exception as exc:  # the card is the user's console here: show the error where they clicked
            self.message.value = error_html(exc)
        else:
            self.message.value = f'<span style="color:#16a34a">✔ {html.escape(message)}</span>'
        self.tick()

    # -- fallbacks ------------------------------------------------------------------------------------

    def fallback_html(self) -> str:
        return (
            card_html(self.status, self.preview, self.live.clock())
            + airflow_html(airflow_rows(self.live.feed, self.status))
            + _chart_html(self.status)
        )

    def fallback_text(self) -> str:
        return card_text(self.status, self.preview, self.live.clock()) + airflow_text(
            airflow_rows(self.live.feed, self.status)
        )
