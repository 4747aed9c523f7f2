"""Badges and human-readable times shared by every view (cards, dashboard, lineage, fallbacks).

Pure functions of immutable status records; no widgets, no Spark.
"""

from __future__ import annotations

import enum
import html
from dataclasses import dataclass
from datetime import datetime, timedelta

from mt_magic.runtime.inspect.recommendations import Recommendation
from mt_magic.runtime.status import JobProgress, Stall, TableStatus
from mt_magic.runtime.workspace import human_duration, utc_text
from mt_magic.vocabulary import JobState, WorkflowSchedulerKind


class FreshnessLevel(enum.Enum):
    """How a table's measured staleness compares with its freshness target."""

    FRESH = "fresh"
    """Staleness within the target."""
    LATE = "late"
    """Beyond the target, up to twice it."""
    STALE = "stale"
    """More than twice the target."""
    UNKNOWN = "unknown"
    """Not measured yet (no staleness poll since the table appeared)."""
    SOURCE_MISSING = "source missing"
    """A source table is gone or unreadable: the stored rows are as of the last refresh, and no refresh can run."""

    @property
    def colour(self) -> str:
        return LEVEL_COLOURS[self]


LEVEL_COLOURS = {
    FreshnessLevel.FRESH: "#16a34a",
    FreshnessLevel.LATE: "#d97706",
    FreshnessLevel.STALE: "#dc2626",
    FreshnessLevel.UNKNOWN: "#6b7280",
    FreshnessLevel.SOURCE_MISSING: "#dc2626",
}

STATE_COLOURS = {
    JobState.IDLE: "#6b7280",
    JobState.SCHEDULED: "#2563eb",
    JobState.RUNNING: "#7c3aed",
    JobState.RETRYING: "#d97706",
    JobState.SUSPENDED: "#6b7280",
    JobState.FAILED: "#dc2626",
}


@dataclass(frozen=True)
class FreshnessBadge:
    """The freshness badge of one status: level (hence colour) and label."""

    level: FreshnessLevel
    label: str

    @property
    def colour(self) -> str:
        return self.level.colour


def freshness_level(staleness: timedelta | None, target: timedelta) -> FreshnessLevel:
    """FRESH within ``target``, LATE up to twice it, STALE beyond, UNKNOWN when not measured."""
    if staleness is None:
        return FreshnessLevel.UNKNOWN
    if staleness <= target:
        return FreshnessLevel.FRESH
    return FreshnessLevel.LATE if staleness <= 2 * target else FreshnessLevel.STALE


def status_level(status: TableStatus) -> FreshnessLevel:
    """The level of a status: SOURCE_MISSING over the measured staleness's."""
    if status.missing_source is not None:
        return FreshnessLevel.SOURCE_MISSING
    return freshness_level(status.staleness, status.freshness)


def freshness_badge(status: TableStatus) -> FreshnessBadge:
    """``fresh · 3s behind / target 10s``-style badge of a status."""
    level = status_level(status)
    if status.missing_source is not None:
        return FreshnessBadge(level, f"source missing · {status.missing_source.source}")
    if status.staleness is None:
        return FreshnessBadge(level, f"staleness unknown · target {human_duration(status.freshness)}")
    behind = "up to date" if not status.staleness else f"{human_duration(status.staleness)} behind"
    if status.staleness and status.behind_upstream is not None:  # its own sources are read, but they are behind
        behind += f" (upstream {status.behind_upstream.rsplit('.', 1)[-1]})"
    return FreshnessBadge(level, f"{level.value} · {behind} / target {human_duration(status.freshness)}")


def human_ago(delta: timedelta) -> str:
    """How long ago or until, as coarse as a glance needs: ``42s``, ``5m``, ``3h 05m``, ``2d 4h``. Coarser than
    :func:`human_duration` past a minute, so a card's relative times read differently once a minute, not every
    second (a card redraws only when what it shows reads differently)."""
    seconds = int(max(delta.total_seconds(), 0.0))
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours < 48 else f"{hours // 24}d {hours % 24}h"


def human_time(at: datetime | None, now: datetime | None = None) -> str:
    """``2025-01-01 10:00:05 UTC (5s ago)``; ``—`` when unknown."""
    if at is None:
        return "—"
    text = utc_text(at)
    if now is None:
        return text
    delta = now - at
    relative = f"{human_ago(delta)} ago" if delta >= timedelta(0) else f"in {human_ago(-delta)}"
    return f"{text} ({relative})"


DURATION_STEPS = ((10.0, 0.1), (3600.0, 1.0), (48 * 3600.0, 60.0), (float("inf"), 3600.0))
"""(below this many seconds, :func:`human_duration` shows steps of this many seconds)."""
AGO_STEPS = ((60.0, 1.0), (48 * 3600.0, 60.0), (float("inf"), 3600.0))
"""The same for :func:`human_ago`."""


def _next_change(delta: float, steps: tuple[tuple[float, float], ...]) -> float:
    """Seconds until a text of ``delta`` seconds (growing with the clock when positive, shrinking to zero when
    negative) reads differently, at the latest."""
    size = abs(delta)
    step = next(step for below, step in steps if size < below)
    if delta >= 0:
        return step - size % step
    lower = max((below for below, _ in steps[:-1] if below < size), default=0.0)
    return min(size % step, size - lower)


def reads_differently_at(at: datetime, now: datetime) -> datetime:
    """When :func:`human_time` of ``at`` next reads differently (at the latest)."""
    return now + timedelta(seconds=max(_next_change((now - at).total_seconds(), AGO_STEPS), 0.001))


def redraw_due(status: TableStatus, now: datetime) -> datetime | None:
    """When a view of ``status`` would first read differently with nothing but the clock moving: a relative time,
    a growing staleness or the freshness level it crosses. ``now`` while something moves by itself (a running
    refresh's progress and stall, another scheduler's runs); ``None``: never by the clock alone."""
    moving = status.state is JobState.RUNNING or status.stall is not None
    if moving or status.scheduler is not WorkflowSchedulerKind.KERNEL:
        return now
    times = [reads_differently_at(at, now) for at in (status.next_refresh_at,) if at is not None]
    last = status.last_refresh
    if last is not None:
        times.append(reads_differently_at(last.started_at, now))
    staleness = status.staleness
    if staleness:  # a source changed and is not reflected yet: the staleness grows with the clock
        grows = _next_change(staleness.total_seconds(), DURATION_STEPS)
        times.append(now + timedelta(seconds=max(grows, 0.001)))
        past = timedelta(milliseconds=1)  # a level holds up to its limit, included
        times += [
            now + limit - staleness + past for limit in (status.freshness, 2 * status.freshness) if staleness <= limit
        ]
    return min(times, default=None)


def badge_html(label: str, colour: str, css_class: str, data: str = "") -> str:
    """A rounded coloured label; ``css_class`` and ``data`` (``data-*`` attributes) let tests find it."""
    return (
        f'<span class="mt-badge {css_class}" {data} style="background:{colour};color:white;'
        f'border-radius:9px;padding:1px 9px;font-size:85%;white-space:nowrap">{html.escape(label)}</span>'
    )


def freshness_badge_html(status: TableStatus) -> str:
    badge = freshness_badge(status)
    return badge_html(badge.label, badge.colour, "mt-freshness", f'data-level="{badge.level.value}"')


def state_badge_html(status: TableStatus) -> str:
    return badge_html(status.state.value, STATE_COLOURS[status.state], "mt-state", f'data-state="{status.state.value}"')


def mode_text(status: TableStatus) -> str:
    """``CONTINUOUS · freshness 5 minutes < 30 minutes threshold · incremental (…)``: the mode and why.

    The stored reason reads "… → CONTINUOUS · …" on its own; the card names the mode first, so not again. A table
    on Airflow says so (the card and the ``%mt`` dashboard).
    """
    reason = status.mode_reason.replace(f" → {status.mode.value}", "")
    where = f" · on {status.scheduler.value}" if status.scheduler is not WorkflowSchedulerKind.KERNEL else ""
    return status.mode.value + where + (f" · {reason}" if reason else "")


STALL_COLOUR = "#b91c1c"


def spark_text(progress: JobProgress | None) -> str:
    """``Spark: 1 job, 1 stage, 2 tasks running, 3/8 tasks done`` — or that Spark runs nothing for it."""
    if progress is None:
        return "Spark: no job running for it"
    counts = [
        f"{count} {noun}{'' if count == 1 else 's'}{suffix}"
        for count, noun, suffix in (
            (progress.active_jobs, "job", ""),
            (progress.active_stages, "stage", ""),
            (progress.running_tasks, "task", " running"),
        )
        if count is not None
    ]
    idle = " — no task running" if progress.running_tasks == 0 else ""
    return "Spark: " + ", ".join([*counts, f"{progress.tasks_done}/{progress.tasks_total} tasks done"]) + idle


def stall_text(stall: Stall) -> str:
    """``running 5m 00s, usually 12s (flagged after 1m 00s; cancelled at 30m 00s) · Spark: …``."""
    usual = f"usually {human_duration(stall.usual)}" if stall.usual is not None else "no usual duration measured yet"
    return (
        f"running {human_duration(stall.running_for)}, {usual} (flagged after {human_duration(stall.flagged_after)}; "
        f"cancelled at {human_duration(stall.limit)}) · {spark_text(stall.spark)}"
    )


def held_badge_html(status: TableStatus) -> str:
    """An amber ``HELD: positive`` badge while the last refresh is held by its expectations; empty otherwise."""
    if status.held is None:
        return ""
    names = ", ".join(e.name for e in status.held.expectations)
    return badge_html(f"HELD: {names}", STATE_COLOURS[JobState.RETRYING], "mt-held")


def stall_badge_html(status: TableStatus) -> str:
    """A red ``STALLED 5m 00s / usually 12s`` badge while the running refresh is stalled; empty otherwise."""
    stall = status.stall
    if stall is None:
        return ""
    usual = f" / usually {human_duration(stall.usual)}" if stall.usual is not None else ""
    return badge_html(f"STALLED {human_duration(stall.running_for)}{usual}", STALL_COLOUR, "mt-stalled")


def recommendation_text(advice: Recommendation) -> str:
    """What to change, why, and the saving where measured (an estimate, said so)."""
    runs = f"{advice.recomputes} recent refresh{'es' if advice.recomputes != 1 else ''}"
    saved = advice.saving
    if saved is None:
        saving = (
            f"{runs} recomputed for it (median {human_duration(advice.recompute)}); no incremental refresh of this "
            "table measured yet, so no estimate of the saving"
        )
    elif advice.refreshes_instead > 1:
        measured = (
            f"{advice.refreshes_instead} incremental refreshes (median {human_duration(advice.incremental)}, "
            f"{advice.incremental_runs} measured) in place of each recompute ({runs} recomputed, median "
            f"{human_duration(advice.recompute)})"
        )
        saving = (
            f"estimate: saves about {human_duration(saved)} per recompute replaced: {measured}"
            if saved > timedelta(0)
            else f"estimate: no time saved (about {human_duration(-saved)} more per recompute replaced), a fresher "
            f"table: {measured}"
        )
    else:
        saving = (
            f"estimate: saves about {human_duration(saved)} per refresh ({runs} recomputed, median "
            f"{human_duration(advice.recompute)}; its {advice.incremental_runs} incremental refresh"
            f"{'es' if advice.incremental_runs != 1 else ''}, median {human_duration(advice.incremental)})"
        )
    why = advice.reason.name.lower().replace("_", " ")
    return f"recomputes ({why}): {advice.change} · {saving}"
