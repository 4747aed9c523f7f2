"""What a table's refreshes cost, predicted from its own history: per refresh (the median of its recent durations,
with their spread) and per hour (per refresh × the refreshes its schedule starts in an hour).

Pure functions of :class:`~mt_magic.runtime.status.RefreshRecord` s and a schedule. ``%mt explain`` of a change
(``inspect.change_preview``) and the dashboard's cost column (``widgets.render``) both ask here, so the two
agree. A refresh of a CONTINUOUS table whose sources did not change commits nothing and costs next to nothing, so
the hourly figure is what the table costs when every scheduled refresh has work to do: an upper bound.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.status import RefreshRecord
from mt_magic.runtime.workspace import human_duration
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshMode, RefreshTrigger

RECENT = 10
"""How many of the newest refreshes of one strategy an estimate reads (older ones ran on other data)."""
FULL_RECOMPUTE = "full recompute"
"""The strategy of a refresh that recomputed the whole table (``kind`` FULL: the first, FULL mode, a fallback)."""
PARTITION_RECOMPUTE = "partition recompute"
INCREMENTAL = "incremental"
"""An incremental refresh whose strategy line names no strategy this version knows."""
CRON_WEEK = timedelta(days=7)
"""A cron schedule's rate is counted over the week after now (a daily or weekly cron averages out)."""


def strategy_of(record: RefreshRecord) -> str:
    """The strategy a refresh ran: an incremental :class:`Strategy`'s label (from its strategy line,
    ``"incremental: merge the aggregated delta · …"``), :data:`FULL_RECOMPUTE` or :data:`PARTITION_RECOMPUTE`."""
    if record.kind is RefreshKind.INCREMENTAL:
        named = Strategy.of_line(record.strategy)
        return named.label if named is not None else INCREMENTAL
    if record.kind is RefreshKind.PARTITION:
        return PARTITION_RECOMPUTE
    return FULL_RECOMPUTE if record.kind is RefreshKind.FULL else "nothing to do"


@dataclass(frozen=True)
class DurationEstimate:
    """A refresh's predicted duration: the median of the recent refreshes it is read from, and their range."""

    strategy: str
    """What it predicts: a strategy's label, or :data:`FULL_RECOMPUTE`."""
    median: timedelta
    low: timedelta
    high: timedelta
    runs: int
    """How many recent refreshes it reads (few: a rough figure)."""
    matched: bool
    """Whether they ran ``strategy``; ``False``: none did, so it reads the table's refreshes of any strategy."""
    elsewhere: RefreshEngine | None = None
    """The engine they ran on when none ran on the engine asked for (``None``: they did, or none was asked)."""
    wanted: RefreshEngine | None = None

    def __str__(self) -> str:
        what = f"{self.runs} {self.strategy}" if self.matched else f"{self.runs} refresh(es) of any strategy"
        spread = "" if self.runs == 1 else f", range {human_duration(self.low)}–{human_duration(self.high)}"
        note = "" if self.matched else f"; none ran {self.strategy} yet"
        if self.elsewhere is not None and self.wanted is not None:
            note += f"; they ran {self.elsewhere.value}, the new definition runs on {self.wanted.value}"
        if self.runs == 1:
            one = self.strategy if self.matched else "refresh, of another strategy"
            return f"{human_duration(self.median)} (the last {one}, one run: a rough figure{note})"
        return f"{human_duration(self.median)} (median of the last {what}{spread}{note})"


def estimate(
    records: Iterable[RefreshRecord], strategy: str, engine: RefreshEngine | None = None, recent: int = RECENT
) -> DurationEstimate | None:
    """A refresh running ``strategy`` (on ``engine``, when given), predicted from ``records`` (newest first): the
    newest ``recent`` successful refreshes that ran it on that engine, else on any (said so: in process and on Spark
    differ by Spark's fixed cost), else (none ran it) those of any strategy; ``None``: no successful refresh that did
    work. Failed attempts and refreshes with nothing to do say nothing about how long work takes: left out.
    """
    done = [r for r in records if r.error is None and r.kind is not RefreshKind.NOOP]
    same = [r for r in done if strategy_of(r) == strategy]
    on_engine = [r for r in same if engine is None or r.engine in (engine, None)]
    elsewhere = None if on_engine or not same else same[0].engine
    used = (on_engine or same or done)[:recent]
    if not used:
        return None
    durations = sorted(r.duration for r in used)
    median = timedelta(seconds=statistics.median(d.total_seconds() for d in durations))
    return DurationEstimate(
        strategy, median, durations[0], durations[-1], len(used), bool(same), elsewhere, engine if elsewhere else None
    )


def refreshes_per_hour(mode: RefreshMode, interval: timedelta, cron: str, now: datetime) -> float:
    """How many refreshes the table's schedule starts in an hour: a FULL table's cron, counted over the week
    after ``now``; otherwise one per freshness interval (as ``manager.schedule.schedule_for`` decides)."""
    if mode is RefreshMode.FULL and cron:
        from croniter import croniter

        fires, end, runs = 0, now + CRON_WEEK, croniter(cron, now)
        while runs.get_next(datetime) <= end:
            fires += 1
        return fires / (CRON_WEEK.total_seconds() / 3600)
    seconds = interval.total_seconds()
    return 3600 / seconds if seconds > 0 else 0.0


@dataclass(frozen=True)
class HourlyCost:
    """Refresh time per hour: one refresh's estimate × the schedule's refreshes per hour."""

    per_refresh: DurationEstimate
    refreshes: float

    @property
    def per_hour(self) -> timedelta:
        return self.per_refresh.median * self.refreshes

    def __str__(self) -> str:
        low, high = self.per_refresh.low * self.refreshes, self.per_refresh.high * self.refreshes
        spread = "" if self.per_refresh.runs == 1 else f" (range {human_duration(low)}–{human_duration(high)})"
        rate = f"{self.refreshes:.3g} refresh(es) an hour"
        return (
            f"up to {human_duration(self.per_hour)} of refresh time an hour{spread}: {rate} × "
            f"{human_duration(self.per_refresh.median)}, when every refresh has changes to apply"
        )


def hourly_cost(
    records: Sequence[RefreshRecord], strategy: str, refreshes: float, engine: RefreshEngine | None = None
) -> HourlyCost | None:
    """``refreshes`` an hour of ``strategy`` on ``engine`` (:func:`estimate`); ``None`` without history."""
    per_refresh = estimate(records, strategy, engine)
    return None if per_refresh is None else HourlyCost(per_refresh, refreshes)


def usual_strategy(records: Iterable[RefreshRecord], recent: int = RECENT) -> str | None:
    """The strategy most of the newest ``recent`` successful refreshes that did work ran (``None``: none yet);
    the first refresh (a full recompute, always) counts only when nothing else ran."""
    done = [r for r in records if r.error is None and r.kind is not RefreshKind.NOOP][:recent]
    later = [r for r in done if r.trigger is not RefreshTrigger.INITIAL] or done
    if not later:
        return None
    return statistics.mode(strategy_of(r) for r in later)


def observed_per_hour(records: Sequence[RefreshRecord], interval: timedelta, now: datetime) -> timedelta | None:
    """Refresh time an hour the table has been costing: the durations of ``records`` (every attempt: failed ones
    and those with nothing to do cost time too) over the time they span up to ``now`` — at least one ``interval``
    per record, so a table refreshed once a minute ago is not priced as if it refreshed all the time. ``None``: no
    records."""
    if not records:
        return None
    spent = sum((r.duration for r in records), timedelta(0))
    span = max(now - min(r.started_at for r in records), interval * len(records), timedelta(seconds=1))
    return spent * (timedelta(hours=1) / span)
