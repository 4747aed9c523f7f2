"""Fixtures for RefreshManager unit tests: a fake clock, a fake backend, and managers driven by step()."""

from __future__ import annotations

import random
from typing import Any

import pytest
from manager_helpers import RETRY, T0, ManagerFactory

from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def backend(clock: FakeClock) -> FakeBackend:
    return FakeBackend(clock=clock)


@pytest.fixture
def executor() -> ManualExecutor:
    """Refreshes submitted to it run only when the test calls ``run_all()``."""
    return ManualExecutor()


@pytest.fixture
def make_manager(backend: FakeBackend, clock: FakeClock, executor: ManualExecutor) -> ManagerFactory:
    """A manager on the fake clock; refreshes run inline, or via ``executor`` with ``deferred=True``."""

    def make(*, deferred: bool = False, **kwargs: Any) -> RefreshManager:
        kwargs.setdefault("rng", random.Random(1234))
        kwargs.setdefault("retry", RETRY)
        return RefreshManager(
            backend, clock=clock, executor=executor if deferred else ManualExecutor(inline=True), **kwargs
        )

    return make
