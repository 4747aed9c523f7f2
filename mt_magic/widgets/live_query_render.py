"""What a live query shows, as HTML and text (pure functions of immutable records; no widgets, no threads).

The header says what the rows are *as of*: for each table the query read, its snapshot, when that was
committed and, for a materialized table, its staleness as the refresh manager last measured it; then when the
query last ran, how long it took, and whether a re-run is waiting, running or paused.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from mt_magic.runtime.inspect.query import QueryResult, SourceSnapshot
from mt_magic.runtime.status import TableStatus
from mt_magic.runtime.workspace import human_duration
from mt_magic.widgets.badges import human_time
from mt_magic.widgets.render import CARD_STYLE, CELL


@dataclass(frozen=True)
class LiveQueryState:
    """Everything the header shows besides the result (read under the view's lock)."""

    runs: int
    running: bool
    paused: bool
    waiting: bool
    """A commit arrived that the rows do not reflect yet."""
    error: str | None


def _cell(value: object) -> str:
    return "NULL" if value is None else str(value)


def staleness_text(source: SourceSnapshot, status: TableStatus | None) -> str:
    """A materialized table's measured staleness against its target; a plain table is a source."""
    if not source.materialized:
        return "source table"
    if status is None or status.staleness is None:
        return "staleness unknown"
    within = "" if status.within_freshness is not False else " (behind its target)"
    return f"{human_duration(status.staleness)} behind / target {human_duration(status.freshness)}{within}"


def as_of_rows(
    result: QueryResult, statuses: Mapping[str, TableStatus], now: datetime
) -> list[tuple[str, str, str, str]]:
    """(table, snapshot, committed, staleness) per table read."""
    return [
        (
            s.table,
            "no snapshot" if s.snapshot_id is None else str(s.snapshot_id),
            human_time(s.committed_at, now),
            staleness_text(s, statuses.get(s.table)),
        )
        for s in result.as_of
    ]


def run_text(result: QueryResult, state: LiveQueryState, now: datetime) -> str:
    """``last run 2025-01-01 10:00:05 UTC (5s ago) in 0.4s · 3 rows · run 2 · re-running…``."""
    count = f"{len(result.rows)}{'+' if result.truncated else ''} row(s)"
    took = human_duration(result.finished_at - result.started_at)
    parts = [f"last run {human_time(result.finished_at, now)} in {took}", count, f"run {state.runs}"]
    if state.paused:
        parts.append("paused" + (": a commit is waiting" if state.waiting else ""))
    elif state.running:
        parts.append("re-running…")
    elif state.waiting:
        parts.append("a commit arrived: re-run due")
    return " · ".join(parts)


def header_html(result: QueryResult, state: LiveQueryState, statuses: Mapping[str, TableStatus], now: datetime) -> str:
    rows = "".join(
        f'<tr class="mt-as-of" data-table="{html.escape(t)}" data-snapshot="{html.escape(snap)}">'
        + "".join(f'<td style="{CELL}">{html.escape(v)}</td>' for v in (t, snap, committed, stale))
        + "</tr>"
        for t, snap, committed, stale in as_of_rows(result, statuses, now)
    )
    table = (
        '<table style="border-collapse:collapse;font-size:85%;color:#374151"><thead><tr>'
        + "".join(f'<th style="{CELL}">{h}</th>' for h in ("as of", "snapshot", "committed", "staleness"))
        + f"</tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else '<div style="color:#6b7280;font-size:85%">reads no table of the catalog (nothing to follow)</div>'
    )
    state_attr = "paused" if state.paused else "running" if state.running else "idle"
    return (
        f'<div class="mt-live-query-header"><b>live query</b> '
        f'<span class="mt-live-run" data-runs="{state.runs}" data-state="{state_attr}" style="color:#6b7280">'
        f"{html.escape(run_text(result, state, now))}</span>{table}</div>"
    )


def rows_html(result: QueryResult) -> str:
    """The result rows as an HTML table (``data-runs`` changes with each run, for tests and the browser)."""
    head = "".join(f'<th style="{CELL}">{html.escape(c)}</th>' for c in result.columns)
    body = "".join(
        '<tr class="mt-live-row">' + "".join(f'<td style="{CELL}">{html.escape(_cell(v))}</td>' for v in row) + "</tr>"
        for row in result.rows
    )
    more = f'<div style="color:#6b7280">first {result.limit} rows shown (more exist)</div>' if result.truncated else ""
    return (
        f'<div class="mt-live-rows"><div style="max-height:320px;overflow:auto">'
        f'<table style="border-collapse:collapse;font-size:90%"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{more}</div>"
    )


def error_html(error: str | None) -> str:
    if not error:
        return ""
    return f'<div class="mt-live-error" style="color:#dc2626">last re-run failed: {html.escape(error)}</div>'


def live_query_html(
    result: QueryResult, state: LiveQueryState, statuses: Mapping[str, TableStatus], now: datetime
) -> str:
    """The whole view as static HTML (its fallback where widgets do not render)."""
    return (
        f'<div class="mt-live-query-static" style="{CARD_STYLE}">{header_html(result, state, statuses, now)}'
        f"{error_html(state.error)}{rows_html(result)}</div>"
    )


def live_query_text(
    result: QueryResult, state: LiveQueryState, statuses: Mapping[str, TableStatus], now: datetime
) -> str:
    lines = [f"live query — {run_text(result, state, now)}"]
    lines += [
        f"  as of {t} @ {snap}, committed {c}, {stale}" for t, snap, c, stale in as_of_rows(result, statuses, now)
    ]
    if state.error:
        lines.append(f"  last re-run failed: {state.error}")
    lines.append("  " + " | ".join(result.columns))
    lines += ["  " + " | ".join(_cell(v) for v in row) for row in result.rows[:20]]
    return "\n".join(lines)
