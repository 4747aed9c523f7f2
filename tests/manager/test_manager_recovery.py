"""Recovery from the catalog alone: catch up once, resume schedules, follow tables created or dropped elsewhere."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from manager_helpers import MINUTE, T0, ManagerFactory, continuous, full

from mt_magic.runtime.status import EventKind, RefreshEvent, RefreshRecord
from mt_magic.testing import FakeBackend, FakeClock
from mt_magic.vocabulary import JobState, RefreshKind, RefreshTrigger


def test_start_catches_up_behind_tables_once_then_follows_their_schedules(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    old = RefreshRecord(
        RefreshKind.FULL, RefreshTrigger.SCHEDULED, T0 - timedelta(hours=1), timedelta(seconds=3), 42, 7
    )
    backend.put(continuous("c.db.never", MINUTE))
    backend.put(full("c.db.behind", "*/5 * * * *", last_refresh_at=T0 - timedelta(hours=1)))
    backend.put(continuous("c.db.fresh", MINUTE, last_refresh_at=T0 + 90 * timedelta(seconds=1)))
    backend.histories["c.db.behind"] = [old]
    clock.set(T0 + 2 * MINUTE)
    manager = make_manager()

    started = manager.step()
    assert [(r.table, r.trigger, r.scheduled_time) for r in started] == [
        ("c.db.behind", RefreshTrigger.CATCH_UP, T0),  # the latest missed fire time
        ("c.db.never", RefreshTrigger.CATCH_UP, T0 + 2 * MINUTE),
    ]
    assert manager.status("c.db.fresh").next_refresh_at == T0 + 150 * timedelta(seconds=1)
    assert manager.status("c.db.behind").next_refresh_at == T0 + 5 * MINUTE
    assert manager.step() == []
    clock.set(T0 + 5 * MINUTE)
    assert [(r.table, r.trigger) for r in manager.step()] == [
        ("c.db.fresh", RefreshTrigger.SCHEDULED),
        ("c.db.never", RefreshTrigger.SCHEDULED),
        ("c.db.behind", RefreshTrigger.SCHEDULED),
    ]


def test_the_last_refresh_is_loaded_from_the_history_on_start(
    backend: FakeBackend, make_manager: ManagerFactory
) -> None:
    record = RefreshRecord(RefreshKind.INCREMENTAL, RefreshTrigger.SCHEDULED, T0 - MINUTE, timedelta(seconds=2), 5, 9)
    backend.put(continuous("c.db.t", 10 * MINUTE, last_refresh_at=T0 - MINUTE))
    backend.histories["c.db.t"] = [record]
    manager = make_manager()
    manager.step()
    assert manager.status("c.db.t").last_refresh == record
    assert backend.count("history", "c.db.t") == 1


def test_rediscovery_adds_new_tables_and_removes_dropped_ones(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.a", MINUTE, last_refresh_at=T0))
    manager = make_manager(rediscover_every=timedelta(seconds=30))
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    manager.step()
    assert [e.kind for e in events] == [EventKind.TABLE_ADDED]

    backend.put(continuous("c.db.b", MINUTE))
    backend.drop("c.db.a")
    clock.advance(seconds=29)
    assert manager.step() == [] and backend.count("discover") == 1
    clock.advance(seconds=1)
    assert [r.table for r in manager.step()] == ["c.db.b"]
    assert backend.count("discover") == 2
    assert [s.name for s in manager.statuses()] == ["c.db.b"]
    assert [(e.kind, e.table) for e in events][1:3] == [
        (EventKind.TABLE_ADDED, "c.db.b"),
        (EventKind.TABLE_REMOVED, "c.db.a"),
    ]


def test_a_schedule_changed_elsewhere_is_picked_up_by_rediscovery(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(full("c.db.f", "0 * * * *", last_refresh_at=T0))
    manager = make_manager(rediscover_every=MINUTE)
    manager.step()
    assert manager.status("c.db.f").next_refresh_at == T0 + 60 * MINUTE

    backend.put(replace(backend.tables["c.db.f"], cron="*/10 * * * *"))
    clock.advance(minutes=1)
    manager.step()
    assert manager.status("c.db.f").next_refresh_at == T0 + 10 * MINUTE
    assert manager.status("c.db.f").state is JobState.SCHEDULED


def test_a_table_with_a_bad_cron_is_skipped_not_fatal(backend: FakeBackend, make_manager: ManagerFactory) -> None:
    backend.put(full("c.db.bad", "not a cron"))
    backend.put(continuous("c.db.good", MINUTE))
    manager = make_manager()
    assert [r.table for r in manager.step()] == ["c.db.good"]
    assert [s.name for s in manager.statuses()] == ["c.db.good"]
