"""Readable HTML and text for cards, dashboards and statement results — what every front end can show.

The live widgets build their HTML children from these functions, and use them again as the ``text/html``
and ``text/plain`` entries of their mime bundle, so terminal IPython, nbconvert and front ends without the
widget manager show the same content, frozen at display time. Pure functions of immutable records.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from mt_magic.errors import MtMagicError
from mt_magic.runtime.inspect.recommendations import recommend
from mt_magic.runtime.results import StatementResult
from mt_magic.runtime.spark.preview import Preview
from mt_magic.runtime.status import Listing, TableStatus
from mt_magic.vocabulary import JobState, WorkflowSchedulerKind
from mt_magic.widgets.badges import (
    freshness_badge,
    freshness_badge_html,
    held_badge_html,
    human_duration,
    human_time,
    mode_text,
    recommendation_text,
    stall_badge_html,
    stall_text,
    state_badge_html,
)

CARD_STYLE = "border:1px solid #d1d5db;border-radius:6px;padding:6px 10px;margin:4px 0"
CELL = "text-align:left;padding:1px 8px 1px 0;vertical-align:top"


def error_html(exc: BaseException) -> str:
    """An error where the user acted: what is wrong in red and, for mt_magic's errors, the Fix on its own line."""
    if isinstance(exc, MtMagicError) and exc.fix_line():
        fix = f'<br><span style="color:#374151">{html.escape(exc.fix_line())}</span>'
        return f'<span style="color:#dc2626">✖ {html.escape(exc.headline())}</span>{fix}'
    return f'<span style="color:#dc2626">✖ {html.escape(str(exc) or type(exc).__name__)}</span>'


def last_refresh_text(status: TableStatus, now: datetime | None = None) -> str:
    """``full · 1.2s · 10 rows · 2025-01-01 10:00:00 UTC (5s ago)``."""
    last = status.last_refresh
    if last is None:
        return "never"
    parts = [
        last.kind.value,
        last.trigger.value,
        human_duration(last.duration),
        f"{last.rows_written} rows",
        human_time(last.started_at, now),
    ]
    return " · ".join(parts)


def next_refresh_text(status: TableStatus, now: datetime | None = None) -> str:
    if status.state is JobState.SUSPENDED:
        return "suspended"
    if status.state is JobState.RUNNING:
        return "running now"
    return human_time(status.next_refresh_at, now)


def progress_text(status: TableStatus) -> str:
    """``3/8 tasks`` while Spark runs the refresh, ``starting`` before the first task, else empty."""
    if status.state is not JobState.RUNNING:
        return ""
    progress = status.progress
    return "starting" if progress is None else f"{progress.tasks_done}/{progress.tasks_total} tasks"


def detail_rows(status: TableStatus, now: datetime | None = None) -> list[tuple[str, str]]:
    """(label, text) lines of a card below its title."""
    rows = [
        (
            "freshness",
            f"target {human_duration(status.freshness)} · measured staleness {human_duration(status.staleness)}",
        ),
        ("job", status.state.value + (f" · {progress_text(status)}" if progress_text(status) else "")),
        ("last refresh", last_refresh_text(status, now)),
        ("next refresh", next_refresh_text(status, now)),
    ]
    last = status.last_refresh
    if last is not None and last.engine is not None:
        rows.insert(3, ("ran", f"{last.strategy or last.kind.value} · {last.engine.value}"))
    if status.stall is not None:
        rows.insert(2, ("stalled", stall_text(status.stall)))
    advice = recommend(status.recent, status.freshness)
    if advice is not None:
        rows.append(("advice", recommendation_text(advice)))
    if status.upstream:
        rows.append(("reads", ", ".join(status.upstream)))
    if status.scheduler is not WorkflowSchedulerKind.KERNEL:
        rows.append(("scheduler", f"{status.scheduler.value}: its runs, retries and logs are there, not here"))
    if status.refreshed_by is not None:
        rows.append(("refreshed by", refreshed_by_text(status)))
    if status.paused:
        rows.append(("paused", status.paused))
    if status.missing_source is not None:
        rows.insert(0, ("source missing", status.missing_source.message))
    failures = f" ({status.consecutive_failures} in a row)" if status.consecutive_failures > 1 else ""
    if status.held is not None:
        rows.insert(0, ("held", status.held.text + failures))
    elif status.last_error and (
        status.missing_source is None or status.missing_source.message not in status.last_error
    ):
        rows.append(("error", status.last_error + failures))
    if status.state is JobState.FAILED:
        rows.append(
            (
                "suspended",
                "after repeated failures; the tables reading it wait. Fix the cause, then "
                "ALTER MATERIALIZED TABLE … RESUME (or refresh it by hand).",
            )
        )
    return rows


def refreshed_by_text(status: TableStatus) -> str:
    """Who holds the table's refresh lease: this kernel, or another process (which then refreshes it)."""
    if status.refreshed_by is None:
        return "nobody (lease free)"
    return f"this process ({status.refreshed_by})" if status.refreshed_here else status.refreshed_by


def title_html(status: TableStatus) -> str:
    return (
        f'<div class="mt-title"><b style="font-size:110%">{html.escape(status.name)}</b> '
        f"{state_badge_html(status)} {held_badge_html(status)} {stall_badge_html(status)} "
        f"{freshness_badge_html(status)}</div>"
        f'<div class="mt-mode" style="color:#4b5563">{html.escape(mode_text(status))}</div>'
    )


def details_html(status: TableStatus, now: datetime | None = None) -> str:
    rows = "".join(
        f'<tr class="mt-detail-{label.replace(" ", "-")}"><td style="{CELL};color:#6b7280">{html.escape(label)}</td>'
        f'<td style="{CELL}">{html.escape(text)}</td></tr>'
        for label, text in detail_rows(status, now)
    )
    return f'<table class="mt-details" style="border-collapse:collapse">{rows}</table>'


def preview_html(preview: Preview | None) -> str:
    """The preview rows as an HTML table (at most ``preview.limit`` rows)."""
    if preview is None:
        return '<div class="mt-preview" style="color:#6b7280">preview: loading…</div>'
    if preview.snapshot_id is None:
        return '<div class="mt-preview" style="color:#6b7280">preview: no rows yet (first refresh pending)</div>'
    order = f", newest {', '.join(preview.ordered_by)} first" if preview.ordered_by else ""
    caption = f"preview: {len(preview.rows)} row(s) of snapshot {preview.snapshot_id}{order}"
    head = "".join(f'<th style="{CELL}">{html.escape(c)}</th>' for c in preview.columns)
    body = "".join(
        "<tr>" + "".join(f'<td style="{CELL}">{html.escape(_cell(v))}</td>' for v in row) + "</tr>"
        for row in preview.rows
    )
    return (
        f'<div class="mt-preview"><div style="color:#6b7280">{html.escape(caption)}</div>'
        f'<div style="max-height:220px;overflow:auto"><table style="border-collapse:collapse;font-size:90%">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></div>"
    )


def _cell(value: object) -> str:
    return "NULL" if value is None else str(value)


def card_html(status: TableStatus, preview: Preview | None, now: datetime | None = None) -> str:
    """The whole card as static HTML (the fallback of the live card)."""
    return (
        f'<div class="mt-card-static" style="{CARD_STYLE}">{title_html(status)}{details_html(status, now)}'
        f"{preview_html(preview)}</div>"
    )


def card_text(status: TableStatus, preview: Preview | None, now: datetime | None = None) -> str:
    lines = [f"{status.name} — {mode_text(status)}", f"  [{freshness_badge(status).label}]"]
    lines += [f"  {label}: {text}" for label, text in detail_rows(status, now)]
    if preview is not None and preview.snapshot_id is not None:
        lines.append(f"  preview ({len(preview.rows)} of up to {preview.limit} rows): {', '.join(preview.columns)}")
        lines += ["    " + " | ".join(_cell(v) for v in row) for row in preview.rows[:5]]
        if len(preview.rows) > 5:
            lines.append(f"    … {len(preview.rows) - 5} more")
    return "\n".join(lines)


STATUS_HEADERS = ("table", "mode", "state", "freshness", "last refresh", "next refresh", "error")


def _status_cells(s: TableStatus, now: datetime | None) -> tuple[str, ...]:
    return (
        s.name,
        mode_text(s),
        s.state.value + (f" · STALLED {stall_text(s.stall)}" if s.stall is not None else ""),
        freshness_badge(s).label,
        last_refresh_text(s, now),
        next_refresh_text(s, now),
        (f"held: {s.held.text}" if s.held else None)
        or (s.missing_source.message if s.missing_source else s.last_error)
        or (f"paused: {s.paused}" if s.paused else ""),
    )


def dashboard_html(statuses: Sequence[TableStatus], now: datetime | None = None) -> str:
    """Every table in one table, with the same badges as the cards."""
    if not statuses:
        return "<i>No materialized tables yet. Create one with <code>%%materialized</code>.</i>"
    head = "".join(f'<th style="{CELL}">{h}</th>' for h in STATUS_HEADERS)
    rows = []
    for s in statuses:
        cells = [html.escape(c) for c in _status_cells(s, now)]
        cells[2] = f"{state_badge_html(s)} {held_badge_html(s)}".strip()
        if s.stall is not None:
            cells[2] += f' {stall_badge_html(s)}<br><small class="mt-stall">{html.escape(stall_text(s.stall))}</small>'

        cells[3] = freshness_badge_html(s)
        rows.append(
            f'<tr class="mt-row" data-table="{html.escape(s.name)}">'
            + "".join(f'<td style="{CELL}">{c}</td>' for c in cells)
            + "</tr>"
        )
    return (
        f'<table class="mt-dashboard-table" style="border-collapse:collapse"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def dashboard_text(statuses: Sequence[TableStatus], now: datetime | None = None) -> str:
    if not statuses:
        return "No materialized tables yet."
    return "\n".join(" | ".join(c for c in _status_cells(s, now) if c) for s in statuses)


@dataclass(frozen=True)
class StatusListView:
    """A static dashboard of table statuses (when no refresh manager runs to keep one live)."""

    statuses: Sequence[TableStatus]

    def _repr_html_(self) -> str:
        return dashboard_html(self.statuses)

    def __repr__(self) -> str:
        return dashboard_text(self.statuses)


@dataclass(frozen=True)
class StatementResultsView:
    """What a ``%%materialized`` cell or a ``%mt`` control did, one line per statement (and what SHOW shows)."""

    results: Sequence[StatementResult]

    def lines(self) -> list[str]:
        return [r.message for r in self.results]

    def _repr_html_(self) -> str:
        return results_html(self.results)

    def __repr__(self) -> str:
        return results_text(self.results)


def results_html(results: Sequence[StatementResult]) -> str:
    """One line per statement, each followed by what it shows (SHOW, DESCRIBE) as a table or a block."""
    return "<br>".join(messages_html([r.message]) + (listing_html(r.listing) if r.listing else "") for r in results)


def results_text(results: Sequence[StatementResult]) -> str:
    return "\n".join(r.message + ("\n" + listing_text(r.listing) if r.listing else "") for r in results)


def listing_html(listing: Listing) -> str:
    parts = []
    if listing.text:
        parts.append(f'<pre class="mt-listing-text">{html.escape(listing.text)}</pre>')
    if listing.columns:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in listing.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in listing.rows)
        parts.append(f'<table class="mt-listing"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')
    return "".join(parts)


def listing_text(listing: Listing) -> str:
    """The listing as aligned text. An empty row ends a block (DESCRIBE's columns, then its facts), and each block
    is aligned to its own cells: a fact's sentence does not pad the type column of the columns above it."""
    lines = [listing.text] if listing.text else []
    if listing.columns:
        block: list[tuple[str, ...]] = []
        for row in [listing.columns, *listing.rows, ()]:
            if any(row):
                block.append(row)
                continue
            lines += _aligned(block)
            block = []
            if row:
                lines.append("")
    return "\n".join(lines)


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def messages_html(lines: Sequence[str]) -> str:
    return "<br>".join(f'<span class="mt-message">✔ {html.escape(line)}</span>' for line in lines)
