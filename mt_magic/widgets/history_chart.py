"""A table's recent refreshes as a picture (SVG): duration by strategy, rows written, and the staleness each
refresh ended against the freshness target, over time. The one chart of ``%mt history`` (with its table),
``%mt history t --plot`` (:class:`HistoryChartView`, the chart alone) and the card (its recent refreshes).

Hand-written SVG so it renders in every front end (JupyterLab, nbconvert HTML, GitHub) without a plotting
library or JavaScript. A pure function of immutable records.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mt_magic.runtime.inspect.cost_history import FULL_RECOMPUTE, INCREMENTAL, PARTITION_RECOMPUTE, strategy_of
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.status import RefreshRecord
from mt_magic.runtime.workspace import human_duration
from mt_magic.widgets.badges import freshness_level

WIDTH, LEFT, RIGHT = 680, 70, 20
DURATION_TOP, ROWS_TOP, STALENESS_TOP, PANEL, ROWS_PANEL = 24, 140, 206, 80, 40
HEIGHT = STALENESS_TOP + PANEL + 34

STRATEGY_COLOURS = {
    FULL_RECOMPUTE: "#2563eb",
    PARTITION_RECOMPUTE: "#7c3aed",
    Strategy.APPEND_DELTA.label: "#16a34a",
    Strategy.APPLY_CHANGES.label: "#0d9488",
    Strategy.AGGREGATE_MERGE.label: "#65a30d",
    Strategy.AGGREGATE_RETRACT.label: "#4d7c0f",
    Strategy.AFFECTED_GROUPS.label: "#d97706",
    Strategy.AFFECTED_PARTITIONS.label: "#b45309",
    Strategy.AFFECTED_KEYS.label: "#db2777",
    Strategy.AFFECTED_WINDOWS.label: "#9333ea",
    Strategy.NO_LOGICAL_CHANGE.label: "#9ca3af",
    INCREMENTAL: "#15803d",
}
"""One colour per strategy (:func:`~mt_magic.runtime.inspect.cost_history.strategy_of`): recomputes blue and
purple, delta strategies green, slice recomputes amber to pink; anything else grey."""
FAILED = "#dc2626"


def _colour(record: RefreshRecord) -> str:
    return FAILED if record.error else STRATEGY_COLOURS.get(strategy_of(record), "#9ca3af")


def _strategy(record: RefreshRecord) -> str:
    return "failed" if record.error else strategy_of(record)


def _x_scale(records: Sequence[RefreshRecord]):  # type: ignore[no-untyped-def]
    start = min(r.started_at for r in records)
    end = max(r.started_at + r.duration for r in records)
    if end - start < timedelta(seconds=10):
        start, end = start - timedelta(seconds=5), end + timedelta(seconds=5)
    span = (end - start).total_seconds()

    def x(at: datetime) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (at - start).total_seconds() / span

    return x, start, end


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11, colour: str = "#374151") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" text-anchor="{anchor}" '
        f'font-family="sans-serif">{html.escape(text)}</text>'
    )


def _durations(records: Sequence[RefreshRecord], x) -> list[str]:  # type: ignore[no-untyped-def]
    longest = max(r.duration for r in records) or timedelta(seconds=1)
    bar = max(3.0, min(14.0, (WIDTH - LEFT - RIGHT) / (len(records) * 2)))
    parts = [
        _text(LEFT, DURATION_TOP - 8, f"refresh duration by strategy (longest {human_duration(longest)})"),
        f'<line x1="{LEFT}" y1="{DURATION_TOP + PANEL}" x2="{WIDTH - RIGHT}" y2="{DURATION_TOP + PANEL}" '
        'stroke="#9ca3af"/>',
    ]
    for r in records:
        h = max(1.0, PANEL * (r.duration / longest))
        tip = (
            f"{r.started_at:%H:%M:%S} {_strategy(r)} ({r.trigger.value}): {human_duration(r.duration)}, "
            f"{r.rows_written} rows"
        )
        left, top = x(r.started_at) - bar / 2, DURATION_TOP + PANEL - h
        parts.append(
            f'<rect class="mt-duration" x="{left:.1f}" y="{top:.1f}" '
            f'width="{bar:.1f}" height="{h:.1f}" fill="{_colour(r)}" data-strategy="{html.escape(_strategy(r))}">'
            f"<title>{html.escape(tip)}</title></rect>"
        )
    return parts


def _staleness(records: Sequence[RefreshRecord], freshness: timedelta | None, x) -> list[str]:  # type: ignore[no-untyped-def]
    known = [r for r in records if r.staleness_before is not None]
    base = STALENESS_TOP + PANEL
    parts = [
        _text(LEFT, STALENESS_TOP - 8, "staleness when each refresh started"),
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#9ca3af"/>',
    ]
    if not known:
        return [*parts, _text(LEFT + 8, base - PANEL / 2, "not recorded yet (needs two refreshes)", colour="#6b7280")]
    top = max([r.staleness_before for r in known] + ([freshness * 1.25] if freshness else []))  # type: ignore[type-var]
    top = top or timedelta(seconds=1)
    if freshness:
        y = base - PANEL * (freshness / top)
        parts += [
            f'<line class="mt-target" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            'stroke="#6b7280" stroke-dasharray="4 3"/>',
            _text(LEFT - 4, y + 4, f"target {human_duration(freshness)}", "end", 10, "#6b7280"),
        ]
    for r in known:
        staleness = r.staleness_before
        assert staleness is not None
        cx, cy = x(r.started_at), base - PANEL * (staleness / top)
        colour = freshness_level(staleness, freshness).colour if freshness else "#2563eb"
        tip = f"{r.started_at:%H:%M:%S}: {human_duration(staleness)} behind"
        parts.append(
            f'<g class="mt-staleness"><line x1="{cx:.1f}" y1="{base}" x2="{cx:.1f}" y2="{cy:.1f}" '
            f'stroke="{colour}" stroke-width="2"/><circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" '
            f'fill="{colour}"><title>{html.escape(tip)}</title></circle></g>'
        )
    parts.append(_text(LEFT - 4, STALENESS_TOP + 8, human_duration(top), "end", 10, "#6b7280"))
    return parts


def _rows(records: Sequence[RefreshRecord], x) -> list[str]:  # type: ignore[no-untyped-def]
    """Rows each refresh wrote, a thin bar per refresh in the strategy's colour."""
    most = max(r.rows_written for r in records)
    base = ROWS_TOP + ROWS_PANEL
    parts = [
        _text(LEFT, ROWS_TOP - 8, f"rows written (most {most:,})"),
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#9ca3af"/>',
    ]
    bars = []
    for r in records:
        h = ROWS_PANEL * r.rows_written / most if most else 0.0
        tip = f"{r.started_at:%H:%M:%S} {_strategy(r)}: {r.rows_written:,} rows"
        tip += "".join(f"; {e.text()}" for e in r.expectations)  # passed, dropped, failed per expectation
        bars.append(
            f'<rect x="{x(r.started_at) - 1.5:.1f}" y="{base - h:.1f}" width="3" height="{h:.1f}" '
            f'fill="{_colour(r)}"><title>{html.escape(tip)}</title></rect>'
        )
    return [*parts, f'<g class="mt-rows">{"".join(bars)}</g>']


LEGEND_LINE = 15


def _legend(records: Sequence[RefreshRecord], top: float) -> tuple[list[str], float]:
    """The strategies shown, in their colours, from ``top`` down (wrapped to the chart's width); and the last line's
    baseline."""
    parts, x, y = [], float(LEFT), top
    for name in sorted({_strategy(r) for r in records}):
        width = 14 + 6.2 * len(name)
        if x + width > WIDTH - RIGHT and x > LEFT:
            x, y = float(LEFT), y + LEGEND_LINE
        colour = FAILED if name == "failed" else STRATEGY_COLOURS.get(name, "#9ca3af")
        parts.append(_text(x, y, f"■ {name}", "start", 11, colour))
        x += width
    return parts, y


def history_svg(records: Sequence[RefreshRecord], freshness: timedelta | None = None) -> str:
    """An SVG of ``records`` (any order): duration bars by strategy, the rows each wrote, and staleness stems against
    the target, over one time axis; the strategies' legend below."""
    if not records:
        return ""
    x, start, end = _x_scale(records)
    axis = HEIGHT - 8
    legend, last = _legend(records, axis + LEGEND_LINE + 2)
    height = int(last) + 8
    parts = [
        *_durations(records, x),
        *_rows(records, x),
        *_staleness(records, freshness, x),
        _text(LEFT, axis, f"{start:%Y-%m-%d %H:%M:%S}"),
        _text(WIDTH - RIGHT, axis, f"{end:%H:%M:%S} UTC", "end"),
        *legend,
    ]
    return (
        f'<svg class="mt-history-chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}">{"".join(parts)}</svg>'
    )


@dataclass(frozen=True)
class HistoryChartView:
    """``%mt history t --plot``: the chart of the table's recent refreshes alone, and in text the same facts per
    strategy (how many, median duration and range, rows written) and the staleness against the target."""

    table: str
    records: Sequence[RefreshRecord]
    freshness: timedelta | None = None

    def lines(self) -> list[str]:
        """Per strategy: refreshes, median duration (range), rows written; then staleness against the target."""
        lines = []
        for name in sorted({_strategy(r) for r in self.records}):
            mine = [r for r in self.records if _strategy(r) == name]
            durations = sorted(r.duration for r in mine)
            median = timedelta(seconds=statistics.median(d.total_seconds() for d in durations))
            spread = f" ({human_duration(durations[0])}–{human_duration(durations[-1])})" if len(mine) > 1 else ""
            rows = sum(r.rows_written for r in mine)
            lines.append(
                f"{name}: {len(mine)} refresh(es), median {human_duration(median)}{spread}, {rows:,} rows written"
            )
        known = [r.staleness_before for r in self.records if r.staleness_before is not None]
        if known and self.freshness:
            within = sum(1 for s in known if s <= self.freshness)
            lines.append(
                f"staleness when they started: {within} of {len(known)} within the {human_duration(self.freshness)} "
                f"target, worst {human_duration(max(known))}"
            )
        return lines

    def _repr_html_(self) -> str:
        title = f"<b>{html.escape(self.table)}</b> — {len(self.records)} recent refresh(es)"
        if not self.records:
            return f'<div class="mt-history-plot">{title}: no refresh committed yet.</div>'
        return f'<div class="mt-history-plot">{title}<br>{history_svg(self.records, self.freshness)}</div>'

    def __repr__(self) -> str:
        if not self.records:
            return f"{self.table}: no refresh committed yet."
        return "\n".join([f"{self.table}: {len(self.records)} recent refresh(es)", *self.lines()])
