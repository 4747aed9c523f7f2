"""A real RefreshManager on the fake backend and clock, driven by ``step()``, with live views on the same clock.

``ManagerActions`` is the test stand-in for the service: the buttons' calls go straight to the real manager
(freshness "persisted" in the fake catalog), previews come from a dict.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from mt_magic.runtime.fake_backend import FakeBackend, FakeClock, ManualExecutor
from mt_magic.runtime.manager import RefreshManager
from mt_magic.runtime.preview import Preview
from mt_magic.runtime.status import ManagedTable
from mt_magic.sql.statements import Freshness, RefreshMode
from mt_magic.widgets.live import LiveViews

T0 = datetime.fromisoformat("2025-01-01T10:00:00+00:00")
NAME = "mt.default.orders_per_day"


def continuous(name: str = NAME, every: timedelta = timedelta(minutes=1), **kwargs) -> ManagedTable:  # type: ignore[no-untyped-def]
    return ManagedTable(name=name, mode=RefreshMode.CONTINUOUS, freshness=every, cron=None,
                        mode_reason="incremental (aggregate merge)", **kwargs)


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

    def set_freshness(self, name: str, freshness: Freshness) -> str:
        self.calls.append(("set_freshness", name, freshness))
        table = replace(self.backend.tables[name], freshness=freshness.to_timedelta())
        self.backend.put(table)
        self.manager.upsert(table)
        return f"{name}: freshness is now {freshness}."

    def preview(self, name: str, limit: int) -> Preview:
        self.calls.append(("preview", name, limit))
        return self.previews[name]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def backend(clock: FakeClock) -> FakeBackend:
    backend = FakeBackend(clock=clock)
    backend.put(continuous(last_refresh_at=T0))
    return backend


@pytest.fixture
def executor() -> ManualExecutor:
    return ManualExecutor()


@pytest.fixture
def manager(backend: FakeBackend, clock: FakeClock, executor: ManualExecutor) -> RefreshManager:
    """Refreshes wait in ``executor`` until the test runs them; statuses are polled every step."""
    manager = RefreshManager(backend, clock=clock, executor=executor, rng=random.Random(7),
                             staleness_every=timedelta(0), progress_every=timedelta(0))
    manager.step()
    executor.run_all()  # the catch-up run of a table behind its schedule, if any
    manager.step()
    return manager


@pytest.fixture
def actions(manager: RefreshManager, backend: FakeBackend) -> ManagerActions:
    actions = ManagerActions(manager, backend)
    actions.previews[NAME] = Preview(NAME, ("day", "orders"), (("2025-01-01", 3), ("2024-12-31", 5)), 0, 100,
                                     ("day",))
    return actions


@pytest.fixture
def live(manager: RefreshManager, actions: ManagerActions, clock: FakeClock) -> Iterator[LiveViews]:
    """Live views without the updater thread: tests call ``tick()`` and ``run_pending()``."""
    views = LiveViews(manager, actions, clock=clock, preview_rows=lambda: 100, tick_every=None)
    yield views
    views.close()


def subscribers(manager: RefreshManager) -> int:
    return len(manager._runner.subscribers)
