"""A real RefreshManager on the fake backend and clock, driven by ``step()``, with live views on the same clock.

``ManagerActions`` is the test stand-in for the service: the buttons' calls go straight to the real manager
(freshness "persisted" in the fake catalog), previews come from a dict.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta

import pytest
from widget_helpers import NAME, T0, ManagerActions, continuous

from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.spark.preview import Preview
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.widgets.live import LiveViews


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
    manager = RefreshManager(
        backend,
        clock=clock,
        executor=executor,
        rng=random.Random(7),
        staleness_every=timedelta(0),
        progress_every=timedelta(0),
    )
    manager.step()
    executor.run_all()  # the catch-up run of a table behind its schedule, if any
    manager.step()
    return manager


@pytest.fixture
def actions(manager: RefreshManager, backend: FakeBackend) -> ManagerActions:
    actions = ManagerActions(manager, backend)
    actions.previews[NAME] = Preview(NAME, ("day", "orders"), (("2025-01-01", 3), ("2024-12-31", 5)), 0, 100, ("day",))
    return actions


@pytest.fixture
def live(manager: RefreshManager, actions: ManagerActions, clock: FakeClock) -> Iterator[LiveViews]:
    """Live views without the updater thread: tests call ``tick()`` and ``run_pending()``."""
    views = LiveViews(manager, actions, clock=clock, preview_rows=lambda: 100, tick_every=None)
    yield views
    views.close()
