"""Static views of ``%mt``: history (chart + table), lineage (graph), explain, config. HTML and text.

They are not live: each is a picture of one moment, which is what these commands answer.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from mt_magic.runtime.graph import Lineage
from mt_magic.runtime.inspect.recommendations import recommend
from mt_magic.runtime.status import RefreshRecord, TableStatus
from mt_magic.widgets.badges import human_duration, human_time, recommendation_text, stall_text
from mt_magic.widgets.history_chart import history_svg
from mt_magic.widgets.lineage import lineage_svg, lineage_text

CELL = "text-align:left;padding:1px 10px 1px 0"
HISTORY_HEADERS = (
    "started",
    "kind",
    "trigger",
    "duration",
    "rows",
    "staleness before",
    "snapshot",
    "strategy",
    "engine",
)


@dataclass(frozen=True)
class HistoryView:
    """A table's refresh history, newest first: a chart of durations and staleness, then the table."""

    table: str
    records: Sequence[RefreshRecord]
    freshness: timedelta | None = None

    def rows(self) -> list[tuple[str, ...]]:
        return [
            (
                human_time(r.started_at),
                r.kind.value,
                r.trigger.value,
                human_duration(r.duration),
                str(r.rows_written),
                human_duration(r.staleness_before),
                str(r.snapshot_id),
                (f"STALLED: {stall_text(r.stall)} · " if r.stall is not None else "")
                + (f"failed: {r.error}" if r.error else r.strategy or "—"),
                "—" if r.engine is None else r.engine.value,
            )
            for r in self.records
        ]

    def advice(self) -> str:
        """What to change where its refreshes recompute for a reason the user can change (empty otherwise)."""
        advice = recommend(self.records, self.freshness)
        return "" if advice is None else f"advice: {recommendation_text(advice)}"

    def _repr_html_(self) -> str:
        target = f" · freshness target {human_duration(self.freshness)}" if self.freshness else ""
        title = f"<b>{html.escape(self.table)}</b> — {len(self.records)} refresh(es){target}"
        if not self.records:
            return f'<div class="mt-history">{title}: no refresh committed yet.</div>'
        head = "".join(f'<th style="{CELL}">{h}</th>' for h in HISTORY_HEADERS)
        body = "".join(
            "<tr>" + "".join(f'<td style="{CELL}">{html.escape(c)}</td>' for c in row) + "</tr>" for row in self.rows()
        )
        advice = f'<div class="mt-advice">{html.escape(self.advice())}</div>' if self.advice() else ""
        return (
            f'<div class="mt-history">{title}<br>{advice}{history_svg(self.records, self.freshness)}'
            f'<table style="border-collapse:collapse"><tr>{head}</tr>{body}</table></div>'
        )

    def __repr__(self) -> str:
        lines = [f"{self.table}: {len(self.records)} refresh(es), newest first"]
        lines += [self.advice()] if self.advice() else []
        lines.append(" | ".join(HISTORY_HEADERS))
        return "\n".join([*lines, *(" | ".join(r) for r in self.rows())])


@dataclass(frozen=True)
class LineageView:
    """The dependency graph (of one table, or of all), each materialized table coloured by its freshness."""

    graph: Lineage
    statuses: Mapping[str, TableStatus] = field(default_factory=dict)
    focus: str | None = None

    def _repr_html_(self) -> str:
        if not self.graph.nodes:
            return "<i>No materialized tables yet.</i>"
        legend = (
            '<div style="color:#6b7280;font-size:90%">green: within freshness · amber: up to 2× late · '
            "red: more than 2× late · grey: unknown · white: plain Iceberg source</div>"
        )
        return f'<div class="mt-lineage-view">{lineage_svg(self.graph, self.statuses, self.focus)}{legend}</div>'

    def __repr__(self) -> str:
        return lineage_text(self.graph, self.statuses) or "No materialized tables yet."


@dataclass(frozen=True)
class ExplainView:
    """How a table (or a statement) would be refreshed, as the incremental planner explains it."""

    text: str

    def _repr_html_(self) -> str:
        return f'<pre class="mt-explain">{html.escape(self.text)}</pre>'

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ConfigView:
    """The effective configuration, secrets already masked."""

    settings: Mapping[str, str]

    def _repr_html_(self) -> str:
        rows = "".join(
            f'<tr><td style="{CELL}">{html.escape(k)}</td><td style="{CELL}"><code>{html.escape(v)}</code></td></tr>'
            for k, v in self.settings.items()
        )
        return f'<table class="mt-config">{rows}</table>'

    def __repr__(self) -> str:
        return "\n".join(f"{k} = {v}" for k, v in self.settings.items())
