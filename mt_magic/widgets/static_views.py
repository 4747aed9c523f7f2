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
from mt_magic.runtime.status import Decision, Measured, RefreshRecord, TableStatus
from mt_magic.runtime.workspace import human_duration
from mt_magic.widgets.badges import human_time, recommendation_text, stall_text
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
NOT_MEASURED = "not measured"


def _bytes(count: int | None) -> str:
    if count is None:
        return NOT_MEASURED
    for unit in ("B", "KB", "MB"):
        if count < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count:.1f} GB"


def _seconds(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{value:.2f}s"


def _spark(measured: Measured) -> str:
    """The Spark share of a refresh's cost: its task time and jobs.

    >>> _spark(Measured(spark_task_s=0.0, spark_jobs=0)), _spark(Measured(spark_task_s=1.5, spark_jobs=4))
    ('no Spark job', 'Spark tasks 1.50s in 4 job(s)')
    """
    if measured.spark_jobs == 0:
        return "no Spark job"
    jobs = "" if measured.spark_jobs is None else f" in {measured.spark_jobs} job(s)"
    return f"Spark tasks {_seconds(measured.spark_task_s)}{jobs}"


def decision_text(decision: Decision) -> str:
    """One line: the change seen, each candidate's estimate, the choice, and what it cost.

    >>> from mt_magic.runtime.status import Change, Estimates, Measured, SourceDelta
    >>> from mt_magic.vocabulary import RefreshKind
    >>> change = Change((SourceDelta("c.n.events", 1000, 0, 1, 0),), 100_000, 100_000)
    >>> line = decision_text(Decision(RefreshKind.INCREMENTAL, "incremental: append the delta", change,
    ...     Estimates(0.51, 0.55), Measured(0.4, None, None, 2048, 0, 1000, 0)))
    >>> line.split(" · ")[0]
    'saw +1,000/−0 rows, +1/−0 files (1.0% of 100,000)'
    >>> line.split(" · ")[1]
    'estimated incremental 0.51s, full 0.55s (priors) → incremental'
    >>> line.split(" · ")[2]
    'cost 0.40s wall, Spark tasks not measured, read not measured, wrote 2.0 KB'
    """
    change, estimates, measured = decision.change, decision.estimates, decision.measured
    if change is None:
        saw = "saw: the sources' history since the last refresh is gone"
    else:
        added = sum(s.rows_added for s in change.sources)
        removed = sum(s.rows_removed for s in change.sources)
        files_in = sum(s.files_added for s in change.sources)
        files_out = sum(s.files_removed for s in change.sources)
        of = f" ({change.ratio:.1%} of {change.changed_source_rows:,})" if change.ratio is not None else ""
        saw = f"saw +{added:,}/−{removed:,} rows, +{files_in}/−{files_out} files{of}"
    if estimates is None:
        estimated = "not estimated"
    else:
        inc = "no candidate" if estimates.incremental_s is None else _seconds(estimates.incremental_s)
        estimated = f"estimated incremental {inc}, full {_seconds(estimates.full_s)} ({estimates.basis})"
    cost = (
        f"cost {_seconds(measured.wall_s)} wall, {_spark(measured)}, "
        f"read {_bytes(measured.bytes_read)}, wrote {_bytes(measured.bytes_written)}"
    )
    return f"{saw} · {estimated} → {decision.chosen.value} · {cost}"


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

    def details(self) -> list[str]:
        """Each refresh's decision (:func:`decision_text`), in the rows' order; empty where none was recorded."""
        return [
            " · ".join(
                part
                for part in (
                    "" if r.decision is None else decision_text(r.decision),
                    ", ".join(e.text() for e in r.expectations),
                )
                if part
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
        head = "".join(f'<th style="{CELL}">{h}</th>' for h in (*HISTORY_HEADERS, "why"))
        body = "".join(
            "<tr>" + "".join(f'<td style="{CELL}">{html.escape(c)}</td>' for c in (*row, why)) + "</tr>"
            for row, why in zip(self.rows(), self.details(), strict=True)
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
        for row, why in zip(self.rows(), self.details(), strict=True):
            lines.append(" | ".join(row))
            lines += [f"    why: {why}"] if why else []
        return "\n".join(lines)


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
class VerifyView:
    """What ``%mt verify`` found: equal, or the rows that differ with a sample and the likely commit."""

    text: str

    def _repr_html_(self) -> str:
        return f'<pre class="mt-verify">{html.escape(self.text)}</pre>'

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
