"""Readable HTML and text for statement results and table status — what every front end can show.

These views hold immutable records only; they render, they never run Spark. Jupyter picks
``_repr_html_``; terminal IPython and plain ``repr`` get the text form.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mt_magic.runtime.status import JobState, RefreshRecord, TableStatus

STATE_COLOURS = {
    JobState.IDLE: "#6b7280",
    JobState.SCHEDULED: "#2563eb",
    JobState.RUNNING: "#7c3aed",
    JobState.RETRYING: "#d97706",
    JobState.SUSPENDED: "#6b7280",
    JobState.FAILED: "#dc2626",
}


def human_duration(delta: timedelta | None) -> str:
    """``3m 05s``-style durations; ``—`` when unknown."""
    if delta is None:
        return "—"
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours < 48 else f"{hours // 24}d {hours % 24}h"


def human_time(at: datetime | None) -> str:
    return "—" if at is None else at.strftime("%Y-%m-%d %H:%M:%S UTC")


def freshness_badge(status: TableStatus) -> tuple[str, str]:
    """(label, colour): green within target, amber up to twice the target, red beyond, grey unknown."""
    if status.staleness is None:
        return "staleness unknown", "#6b7280"
    ratio = status.staleness / status.freshness if status.freshness else 0.0
    colour = "#16a34a" if ratio <= 1 else "#d97706" if ratio <= 2 else "#dc2626"
    return f"stale {human_duration(status.staleness)} / target {human_duration(status.freshness)}", colour


def _badge(label: str, colour: str) -> str:
    return (f'<span style="background:{colour};color:white;border-radius:8px;padding:1px 8px;'
            f'font-size:85%">{html.escape(label)}</span>')


def _status_row(s: TableStatus) -> tuple[str, ...]:
    last = s.last_refresh
    last_text = "—" if last is None else (
        f"{last.kind.value}, {human_duration(last.duration)}, {last.rows_written} rows, {human_time(last.started_at)}")
    return (s.name, f"{s.mode.value}" + (f" · {s.mode_reason}" if s.mode_reason else ""), s.state.value,
            freshness_badge(s)[0], last_text, human_time(s.next_refresh_at), s.last_error or "")


STATUS_HEADERS = ("table", "mode", "state", "freshness", "last refresh", "next refresh", "error")


@dataclass(frozen=True)
class StatusListView:
    """A dashboard of table statuses."""

    statuses: Sequence[TableStatus]

    def _repr_html_(self) -> str:
        if not self.statuses:
            return "<i>No materialized tables yet. Create one with <code>%%materialized</code>.</i>"
        head = "".join(f"<th style='text-align:left'>{h}</th>" for h in STATUS_HEADERS)
        rows = []
        for s in self.statuses:
            cells = list(map(html.escape, _status_row(s)))
            cells[2] = _badge(s.state.value, STATE_COLOURS[s.state])
            cells[3] = _badge(*freshness_badge(s))
            rows.append("<tr>" + "".join(f"<td style='text-align:left'>{c}</td>" for c in cells) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    def __repr__(self) -> str:
        if not self.statuses:
            return "No materialized tables yet."
        return "\n".join(" | ".join(_status_row(s)) for s in self.statuses)


@dataclass(frozen=True)
class StatementResultsView:
    """What a ``%%materialized`` cell did, one line per statement."""

    results: Sequence[object]

    def lines(self) -> list[str]:
        return [getattr(r, "message", str(r)) for r in self.results]

    def _repr_html_(self) -> str:
        return "<br>".join(f"✔ {html.escape(line)}" for line in self.lines())

    def __repr__(self) -> str:
        return "\n".join(self.lines())


@dataclass(frozen=True)
class HistoryView:
    """A table's refresh history, newest first."""

    table: str
    records: Sequence[RefreshRecord]

    def rows(self) -> list[tuple[str, ...]]:
        return [(human_time(r.started_at), r.kind.value, r.trigger.value, human_duration(r.duration),
                 str(r.rows_written), str(r.snapshot_id)) for r in self.records]

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("started", "kind", "trigger", "duration", "rows", "snapshot"))
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self.rows())
        return f"<b>{html.escape(self.table)}</b><table><tr>{head}</tr>{body}</table>"

    def __repr__(self) -> str:
        return "\n".join([self.table, *(" | ".join(r) for r in self.rows())])


@dataclass(frozen=True)
class ConfigView:
    """The effective configuration, secrets already masked."""

    settings: Mapping[str, str]

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td><code>{html.escape(v)}</code></td></tr>"
                       for k, v in self.settings.items())
        return f"<table>{rows}</table>"

    def __repr__(self) -> str:
        return "\n".join(f"{k} = {v}" for k, v in self.settings.items())
