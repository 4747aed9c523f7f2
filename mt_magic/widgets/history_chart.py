"""``%mt history`` as a picture: refresh durations and the staleness each refresh ended, over time (SVG).

Hand-written SVG so it renders in every front end (JupyterLab, nbconvert HTML, GitHub) without a plotting
library or JavaScript. A pure function of immutable records.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime, timedelta

from mt_magic.runtime.status import RefreshRecord
from mt_magic.vocabulary import RefreshKind
from mt_magic.widgets.badges import freshness_level, human_duration

WIDTH, LEFT, RIGHT = 680, 70, 20
DURATION_TOP, STALENESS_TOP, PANEL = 24, 140, 80
HEIGHT = STALENESS_TOP + PANEL + 34

KIND_COLOURS = {
    RefreshKind.FULL: "#2563eb",
    RefreshKind.PARTITION: "#7c3aed",
    RefreshKind.INCREMENTAL: "#16a34a",
    RefreshKind.NOOP: "#9ca3af",
}


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
        _text(LEFT, DURATION_TOP - 8, f"refresh duration (longest {human_duration(longest)})"),
        f'<line x1="{LEFT}" y1="{DURATION_TOP + PANEL}" x2="{WIDTH - RIGHT}" y2="{DURATION_TOP + PANEL}" '
        'stroke="#9ca3af"/>',
    ]
    for r in records:
        h = max(1.0, PANEL * (r.duration / longest))
        tip = (
            f"{r.started_at:%H:%M:%S} {r.kind.value} ({r.trigger.value}): {human_duration(r.duration)}, "
            f"{r.rows_written} rows"
        )
        left, top = x(r.started_at) - bar / 2, DURATION_TOP + PANEL - h
        parts.append(
            f'<rect class="mt-duration" x="{left:.1f}" y="{top:.1f}" '
            f'width="{bar:.1f}" height="{h:.1f}" fill="{KIND_COLOURS[r.kind]}">'
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


def history_svg(records: Sequence[RefreshRecord], freshness: timedelta | None = None) -> str:
    """An SVG of ``records`` (any order): duration bars by kind above, staleness stems against the target below."""
    if not records:
        return ""
    x, start, end = _x_scale(records)
    parts = [
        *_durations(records, x),
        *_staleness(records, freshness, x),
        _text(LEFT, HEIGHT - 8, f"{start:%Y-%m-%d %H:%M:%S}"),
        _text(WIDTH - RIGHT, HEIGHT - 8, f"{end:%H:%M:%S} UTC", "end"),
    ]
    legend_x = WIDTH - RIGHT
    for kind in sorted({r.kind for r in records}, key=lambda k: k.value, reverse=True):
        parts.append(_text(legend_x, DURATION_TOP - 8, f"■ {kind.value}", "end", 11, KIND_COLOURS[kind]))
        legend_x -= 12 + 7 * len(kind.value)
    return (
        f'<svg class="mt-history-chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}">{"".join(parts)}</svg>'
    )
