"""Table builders and small assertions shared by the RefreshManager tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.status import ManagedTable
from mt_magic.testing import FakeBackend
from mt_magic.vocabulary import RefreshMode

T0 = datetime.fromisoformat("2025-01-01T10:00:00+00:00")
MINUTE = timedelta(minutes=1)

RETRY = RetryPolicy(
    base=timedelta(seconds=10),
    factor=2,
    max_delay=timedelta(minutes=5),
    jitter=0.1,
    suspend_after=3,
)

ManagerFactory = Callable[..., RefreshManager]


def continuous(name: str, every: timedelta = MINUTE, **kwargs: Any) -> ManagedTable:
    """A CONTINUOUS table refreshed every ``every``."""
    return ManagedTable(name=name, mode=RefreshMode.CONTINUOUS, freshness=every, cron=None, **_sources(kwargs))


def full(name: str, cron: str = "*/5 * * * *", freshness: timedelta = 5 * MINUTE, **kwargs: Any) -> ManagedTable:
    """A FULL table on ``cron``."""
    return ManagedTable(name=name, mode=RefreshMode.FULL, freshness=freshness, cron=cron, **_sources(kwargs))


def ran(backend: FakeBackend) -> list[tuple[str, str]]:
    """``(table, trigger)`` of every refresh the backend received, in order."""
    return [(r.table, r.trigger.value) for r in backend.requests]


def _sources(kwargs: dict) -> dict:  # type: ignore[type-arg]
    """A fake table's sources: the materialized ``upstream`` it was given, unless it names plain ones too."""
    return {"sources": kwargs.get("upstream", ())} | kwargs
