"""Failures: backoff with jitter, FAILED after repeated failures with a slow retry, an unreachable catalog."""

from __future__ import annotations

from datetime import timedelta

import pytest
from manager_helpers import MINUTE, RETRY, T0, ManagerFactory, continuous, ran

from mt_magic.errors import CatalogUnavailableError
from mt_magic.runtime.status import EventKind, RefreshEvent
from mt_magic.testing import FakeBackend, FakeClock
from mt_magic.vocabulary import JobState, RefreshTrigger


def within_jitter(actual: timedelta, expected: timedelta) -> bool:
    return expected * (1 - RETRY.jitter) <= actual <= expected * (1 + RETRY.jitter)


def test_failures_back_off_exponentially_then_the_table_suspends_itself_until_resume(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    backend.put(continuous("c.db.down", MINUTE, upstream=("c.db.t",), last_refresh_at=T0 + MINUTE))
    backend.script("c.db.t", *[RuntimeError(f"boom {n}") for n in range(1, 4)])
    manager = make_manager()
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    manager.step()
    clock.set(T0 + MINUTE)

    delays = []
    for _ in range(2):
        assert [r.table for r in manager.step()] == ["c.db.t"]
        status = manager.status("c.db.t")
        assert status.state is JobState.RETRYING
        delays.append(status.next_refresh_at - clock())
        clock.set(status.next_refresh_at - timedelta(milliseconds=1))
        assert manager.step() == []
        clock.set(status.next_refresh_at)
    assert all(
        within_jitter(a, e) for a, e in zip(delays, [timedelta(seconds=10), timedelta(seconds=20)], strict=True)
    ), delays

    assert [r.table for r in manager.step()] == ["c.db.t"]  # the third failure in a row: it gives up
    status = manager.status("c.db.t")
    assert (status.state, status.last_error, status.consecutive_failures) == (
        JobState.FAILED,
        "RuntimeError: boom 3",
        3,
    )
    assert status.next_refresh_at is None
    failed = [e for e in events if e.kind is EventKind.REFRESH_FAILED]
    assert "failed 3 times in a row, so it is suspended" in failed[-1].message
    assert [r.error for r in manager.failures("c.db.t")] == [f"RuntimeError: boom {n}" for n in (3, 2, 1)]

    clock.advance(minutes=120)  # nothing runs: neither the failed table nor the table reading it
    assert manager.step() == []

    manager.resume("c.db.t")
    assert [r.table for r in manager.step()] == ["c.db.t", "c.db.down"]
    status = manager.status("c.db.t")
    assert (status.state, status.last_error, status.consecutive_failures) == (JobState.SCHEDULED, None, 0)


def test_a_failed_refresh_fails_its_waiters_and_a_manual_refresh_skips_the_backoff(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    backend.script("c.db.t", ValueError("bad cast"))
    manager = make_manager()
    manager.step()
    future = manager.refresh_now("c.db.t")
    manager.step()
    with pytest.raises(ValueError, match="bad cast"):
        future.result(0)
    assert manager.status("c.db.t").state is JobState.RETRYING

    retry = manager.refresh_now("c.db.t")
    manager.step()
    assert retry.result(0).snapshot_id is not None
    assert manager.status("c.db.t").state is JobState.SCHEDULED


def test_unreachable_catalog_pauses_all_work_and_recovers(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.a", MINUTE, last_refresh_at=T0))
    backend.put(continuous("c.db.b", MINUTE, last_refresh_at=T0 + timedelta(seconds=1)))
    manager = make_manager(max_concurrent_jobs=1)
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    manager.step()

    backend.script("c.db.a", CatalogUnavailableError("connection refused"))
    clock.set(T0 + 2 * MINUTE)
    assert [r.table for r in manager.step()] == ["c.db.a"]
    assert manager.paused and manager.pause_reason == "connection refused"
    assert [s.state for s in manager.statuses()] == [JobState.SCHEDULED, JobState.SCHEDULED]
    assert manager.status("c.db.a").consecutive_failures == 0
    assert any("paused: catalog unavailable" in e.message for e in events)

    backend.unavailable = "still down"
    discoveries = backend.count("discover")
    attempts = []
    for _ in range(3):
        clock.advance(minutes=10)
        assert manager.step() == []
        attempts.append(backend.count("discover") - discoveries)
    assert attempts == [1, 2, 3]  # each retry is due within the capped backoff
    assert manager.paused

    backend.unavailable = None
    clock.advance(minutes=10)
    assert [(r.table, r.trigger) for r in manager.step()] == [
        ("c.db.a", RefreshTrigger.SCHEDULED),
        ("c.db.b", RefreshTrigger.SCHEDULED),
    ]
    assert not manager.paused
    assert events[-1].kind is EventKind.REFRESH_SUCCEEDED


def test_catalog_backoff_grows_between_discovery_attempts(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.unavailable = "down"
    manager = make_manager()
    manager.step()
    assert manager.paused and manager.statuses() == []
    seen = []
    for _ in range(300):
        clock.advance(seconds=1)
        before = backend.count("discover")
        manager.step()
        if backend.count("discover") > before:
            seen.append(clock())
    gaps = [(b - a).total_seconds() for a, b in zip(seen, seen[1:], strict=False)]
    assert len(gaps) >= 3 and gaps == sorted(gaps), gaps  # 20 s, 40 s, 80 s, ... (jittered, whole seconds)

    backend.unavailable = None
    backend.put(continuous("c.db.late", MINUTE))
    clock.advance(minutes=10)
    assert ran(backend) == [] and [r.table for r in manager.step()] == ["c.db.late"]
    assert not manager.paused
