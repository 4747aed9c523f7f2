"""When refreshes are due: cron and interval schedules and retry backoff.

Pure functions of time and definitions — no threads, no clock, no backend — so every rule the
:class:`~mt_magic.runtime.manager.refresh_manager.RefreshManager` applies is unit-tested with plain datetimes.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from croniter import croniter

from mt_magic.runtime.status import ManagedTable
from mt_magic.vocabulary import RefreshMode

log = logging.getLogger(__name__)

_TICK = timedelta(microseconds=1)


class Schedule(Protocol):
    """The times a table's scheduled refreshes fall on."""

    def next_after(self, when: datetime) -> datetime:
        """The first scheduled time strictly after ``when``."""
        ...

    def latest_fire(self, due_at: datetime, now: datetime) -> datetime:
        """The newest scheduled time at or before ``now`` (not before ``due_at``): missed runs coalesce to it."""
        ...

    def anchor(self, started_at: datetime, scheduled_time: datetime) -> datetime:
        """The time the next run is counted from, after a run that started at ``started_at``."""
        ...


@dataclass(frozen=True)
class CronSchedule:
    """A croniter expression: 5 fields, or 6 with seconds last (croniter's convention)."""

    expression: str

    def __post_init__(self) -> None:
        fields = len(self.expression.split())
        if fields not in (5, 6) or not croniter.is_valid(self.expression):
            raise ValueError(f"invalid cron expression {self.expression!r}: expected 5 fields, or 6 with seconds last")

    def next_after(self, when: datetime) -> datetime:
        return croniter(self.expression, when).get_next(datetime)

    def latest_fire(self, due_at: datetime, now: datetime) -> datetime:
        return croniter(self.expression, now + _TICK).get_prev(datetime)

    def anchor(self, started_at: datetime, scheduled_time: datetime) -> datetime:
        return scheduled_time


@dataclass(frozen=True)
class IntervalSchedule:
    """Every ``every``, counted from the start of the last refresh (CONTINUOUS mode)."""

    every: timedelta

    def __post_init__(self) -> None:
        if self.every <= timedelta(0):
            raise ValueError(f"refresh interval must be positive, got {self.every}")

    def next_after(self, when: datetime) -> datetime:
        return when + self.every

    def latest_fire(self, due_at: datetime, now: datetime) -> datetime:
        if now <= due_at:
            return now
        return due_at + ((now - due_at) // self.every) * self.every

    def anchor(self, started_at: datetime, scheduled_time: datetime) -> datetime:
        return started_at


def schedule_for(table: ManagedTable) -> Schedule:
    """FULL tables follow their cron; CONTINUOUS ones (and FULL without a cron) their freshness interval.

    Raises:
        ValueError: the cron expression or the freshness is invalid (the value is in the message).
    """
    if table.mode is RefreshMode.FULL and table.cron:
        return CronSchedule(table.cron)
    if table.mode is RefreshMode.FULL:
        log.warning("FULL table %s has no cron; refreshing every %s instead", table.name, table.freshness)
    return IntervalSchedule(table.freshness)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; after ``suspend_after`` consecutive failures a table suspends itself.

    A table that keeps failing is not retried forever: it shows FAILED with its last error and waits for
    ``ALTER … RESUME`` (or a manual refresh that succeeds); its downstream tables wait with it.
    """

    base: timedelta = timedelta(seconds=10)
    factor: float = 2.0
    max_delay: timedelta = timedelta(minutes=10)
    jitter: float = 0.2
    """Each delay is scaled by a uniform factor in ``[1 - jitter, 1 + jitter]``."""
    suspend_after: int = 5

    def __post_init__(self) -> None:
        if self.base <= timedelta(0) or self.max_delay < self.base:
            raise ValueError(f"retry needs 0 < base <= max_delay, got base={self.base}, max_delay={self.max_delay}")
        if self.factor < 1:
            raise ValueError(f"retry factor must be >= 1, got {self.factor}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"retry jitter must be in [0, 1), got {self.jitter}")
        if self.suspend_after < 1:
            raise ValueError(f"suspend_after must be >= 1, got {self.suspend_after}")

    def gives_up(self, failures: int) -> bool:
        """Whether this many consecutive failures suspend the table."""
        return failures >= self.suspend_after

    def backoff(self, failures: int) -> timedelta:
        """The delay before the next attempt after ``failures`` (>= 1) consecutive failures, without jitter."""
        limit = self.max_delay.total_seconds()
        try:
            seconds = self.base.total_seconds() * self.factor ** max(failures - 1, 0)
        except OverflowError:
            seconds = limit
        return timedelta(seconds=min(seconds, limit))

    def delay(self, failures: int, rng: random.Random) -> timedelta:
        """:meth:`backoff` scaled by jitter drawn from ``rng`` (injected so tests are deterministic)."""
        scale = 1 + rng.uniform(-self.jitter, self.jitter)
        return self.backoff(failures) * scale
