"""Optimistic-concurrency conflicts: another writer committed first; the refresh runs again soon, uncounted."""

from __future__ import annotations

from datetime import timedelta

from manager_helpers import MINUTE, RETRY, T0, ManagerFactory, continuous

from mt_magic.errors import RefreshConflictError
from mt_magic.runtime.manager.tracked import MAX_CONFLICTS_IN_A_ROW
from mt_magic.testing import FakeBackend, FakeClock
from mt_magic.vocabulary import JobState


def run_until_settled(manager, clock: FakeClock, steps: int) -> None:  # type: ignore[no-untyped-def]
    for _ in range(steps):
        clock.advance(seconds=8)  # past the longest conflict delay (5 s × 1.5)
        manager.step()


def test_conflicts_are_retried_within_seconds_and_never_count_toward_suspension(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    conflicts = RETRY.suspend_after + 2  # more than the failures that would suspend it
    backend.script("c.db.t", *[RefreshConflictError(f"changed {n}") for n in range(conflicts)])
    manager = make_manager()
    assert manager.step() == []  # caught up: nothing due
    future = manager.refresh_now("c.db.t")
    manager.step()
    status = manager.status("c.db.t")
    assert status.consecutive_failures == 0 and status.state is not JobState.FAILED
    assert status.next_refresh_at is not None and status.next_refresh_at - clock() <= timedelta(seconds=2)
    run_until_settled(manager, clock, conflicts)
    assert future.result(timeout=0).snapshot_id is not None  # the manual refresh's waiter saw the success
    assert len(backend.refreshed("c.db.t")) == conflicts + 1
    assert manager.status("c.db.t").consecutive_failures == 0 and manager.failures("c.db.t") == []


def test_endless_conflicts_turn_into_counted_failures(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    backend.script("c.db.t", *[RefreshConflictError("changed") for _ in range(MAX_CONFLICTS_IN_A_ROW + 1)])
    manager = make_manager()
    manager.step()
    manager.refresh_now("c.db.t")
    run_until_settled(manager, clock, MAX_CONFLICTS_IN_A_ROW + 1)
    assert manager.status("c.db.t").consecutive_failures == 1
    assert manager.status("c.db.t").state is JobState.RETRYING
