"""Names shared by the widget tests: the table, the fake clock's start, and the service stand-in."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.spark.preview import Preview
from mt_magic.runtime.status import ManagedTable
from mt_magic.sql.ddl.statements import Freshness
from mt_magic.testing import FakeBackend
from mt_magic.vocabulary import RefreshMode

T0 = datetime.fromisoformat("2025-01-01T10:00:00+00:00")
NAME = "mt.default.orders_per_day"


def continuous(name: str = NAME, every: timedelta = timedelta(minutes=1), **kwargs) -> ManagedTable:  # type: ignore[no-untyped-def]
    return ManagedTable(
        name=name,
        mode=RefreshMode.CONTINUOUS,
        freshness=every,
        cron=None,
        mode_reason="incremental (aggregate merge)",
        **_sources(kwargs),
    )


class ManagerActions:
    """What the buttons call, straight to the real manager; records every call."""

    def __init__(self, manager: RefreshManager, backend: FakeBackend) -> None:
        self.manager, self.backend = manager, backend
        self.calls: list[tuple[object, ...]] = []
        self.previews: dict[str, Preview] = {}

    def refresh(self, name: str, partition=(), cascade: bool = False) -> str:  # type: ignore[no-untyped-def]
        self.calls.append(("refresh", name, partition, cascade))
        self.manager.refresh_now(name, partition, cascade)
        return f"Refreshing {name}."

    def suspend(self, name: str) -> str:
        self.calls.append(("suspend", name))
        self.manager.suspend(name)
        return f"{name} is suspended."

    def resume(self, name: str) -> str:
        self.calls.append(("resume", name))
        self.manager.resume(name)
        return f"{name} is resumed."

    def cancel(self, name: str) -> str:
        self.calls.append(("cancel", name))
        cancelled = self.manager.cancel(name)
        return f"Cancelled the running refresh of {name}." if cancelled else "nothing to cancel"

    def set_freshness(self, name: str, freshness: Freshness) -> str:
        self.calls.append(("set_freshness", name, freshness))
        table = replace(self.backend.tables[name], freshness=freshness.to_timedelta())
        self.backend.put(table)
        self.manager.upsert(table)
        return f"{name}: freshness is now {freshness}."

    def preview(self, name: str, limit: int) -> Preview:
        self.calls.append(("preview", name, limit))
        return self.previews[name]


def subscribers(manager: RefreshManager) -> int:
    return len(manager._runner.subscribers)


def _sources(kwargs: dict) -> dict:  # type: ignore[type-arg]
    """A fake table's sources: the materialized ``upstream`` it was given, unless it names plain ones too."""
    return {"sources": kwargs.get("upstream", ())} | kwargs
