"""When the manager refreshes: schedules, coalescing, one run per table, upstream order, the cap."""

from __future__ import annotations

from datetime import timedelta

import pytest
from manager_helpers import MINUTE, T0, ManagerFactory, continuous, full, ran

from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState, RefreshKind, RefreshTrigger

SECOND = timedelta(seconds=1)


def test_continuous_table_refreshes_every_interval_from_its_last_start(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0 - 10 * SECOND))
    manager = make_manager()

    assert manager.step() == []
    assert manager.status("c.db.t").state is JobState.SCHEDULED
    assert manager.status("c.db.t").next_refresh_at == T0 + 50 * SECOND
    clock.advance(seconds=49)
    assert manager.step() == []
    clock.advance(seconds=1)
    [request] = manager.step()
    assert (request.trigger, request.scheduled_time) == (RefreshTrigger.SCHEDULED, T0 + 50 * SECOND)
    assert manager.status("c.db.t").next_refresh_at == T0 + 110 * SECOND


def test_full_table_follows_its_cron(backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory) -> None:
    backend.put(full("c.db.f", "*/5 * * * *", last_refresh_at=T0 + SECOND))
    clock.advance(seconds=2)
    manager = make_manager()

    assert manager.step() == []
    assert manager.status("c.db.f").next_refresh_at == T0 + 5 * MINUTE
    clock.set(T0 + 5 * MINUTE)
    [request] = manager.step()
    assert (request.trigger, request.scheduled_time) == (RefreshTrigger.SCHEDULED, T0 + 5 * MINUTE)
    assert manager.status("c.db.f").next_refresh_at == T0 + 10 * MINUTE


def test_six_field_cron_runs_every_ten_seconds(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(full("c.db.s", "* * * * * */10", timedelta(seconds=10), last_refresh_at=T0))
    manager = make_manager()
    times = []
    for _ in range(25):
        clock.advance(seconds=2)
        times += [r.scheduled_time for r in manager.step()]
    assert times == [T0 + n * 10 * SECOND for n in range(1, 6)]


def test_missed_cron_runs_coalesce_into_one_with_the_latest_missed_time(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(full("c.db.f", "*/5 * * * *", last_refresh_at=T0))
    manager = make_manager()
    manager.step()

    clock.set(T0 + 27 * MINUTE + 13 * SECOND)  # the kernel slept over five fire times
    [request] = manager.step()
    assert request.scheduled_time == T0 + 25 * MINUTE
    assert manager.step() == []
    assert manager.status("c.db.f").next_refresh_at == T0 + 30 * MINUTE


def test_missed_interval_runs_coalesce_into_one(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    manager = make_manager()
    manager.step()
    clock.advance(minutes=5, seconds=30)
    assert len(manager.step()) == 1
    assert manager.step() == []
    assert manager.status("c.db.t").next_refresh_at == clock() + MINUTE


def test_a_table_never_runs_twice_at_once_and_requests_during_a_run_coalesce(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    manager = make_manager(deferred=True)
    manager.step()
    clock.advance(minutes=1)
    assert len(manager.step()) == 1
    first, second = manager.refresh_now("c.db.t"), manager.refresh_now("c.db.t")
    clock.advance(minutes=3)  # the schedule comes due too while the job runs
    assert manager.step() == []
    assert manager.status("c.db.t").state is JobState.RUNNING

    executor.run_all()
    [follow_up] = manager.step()
    assert follow_up.trigger is RefreshTrigger.MANUAL
    assert manager.step() == []
    executor.run_all()
    assert first.result(0) is second.result(0)
    assert len(backend.requests) == 2
    assert manager.step() == []


def test_upstream_runs_first_and_downstream_waits_for_its_commit(
    backend: FakeBackend, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.down", MINUTE, upstream=("c.db.up",)))
    backend.put(continuous("c.db.up", MINUTE))
    manager = make_manager(deferred=True)

    assert [r.table for r in manager.step()] == ["c.db.up"]
    assert manager.step() == []
    executor.run_all()
    [down] = manager.step()
    assert (down.table, down.trigger) == ("c.db.down", RefreshTrigger.CASCADE)
    executor.run_all()
    assert ran(backend) == [("c.db.up", "catch-up"), ("c.db.down", "cascade")]


def test_upstream_order_holds_across_a_chain(backend: FakeBackend, make_manager: ManagerFactory) -> None:
    backend.put(continuous("c.db.c", MINUTE, upstream=("c.db.b",)))
    backend.put(continuous("c.db.b", MINUTE, upstream=("c.db.a",)))
    backend.put(continuous("c.db.a", MINUTE))
    make_manager().step()
    assert [table for table, _ in ran(backend)] == ["c.db.a", "c.db.b", "c.db.c"]


def test_a_committed_upstream_cascades_but_a_noop_does_not(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.up", MINUTE, last_refresh_at=T0))
    backend.put(continuous("c.db.down", 10 * MINUTE, upstream=("c.db.up",), last_refresh_at=T0))
    backend.script("c.db.up", RefreshKind.NOOP)
    manager = make_manager()
    manager.step()

    clock.advance(minutes=1)
    assert [r.table for r in manager.step()] == ["c.db.up"]
    clock.advance(minutes=1)
    assert [(r.table, r.trigger) for r in manager.step()] == [
        ("c.db.up", RefreshTrigger.SCHEDULED),
        ("c.db.down", RefreshTrigger.CASCADE),
    ]
    assert manager.status("c.db.down").next_refresh_at == clock() + 10 * MINUTE


def test_manual_cascade_refreshes_every_downstream_once_in_topological_order(
    backend: FakeBackend, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.a", MINUTE, last_refresh_at=T0, partitioned_by=("dt",)))
    backend.put(continuous("c.db.c", MINUTE, upstream=("c.db.a", "c.db.b"), last_refresh_at=T0))
    backend.put(continuous("c.db.b", MINUTE, upstream=("c.db.a",), last_refresh_at=T0, partitioned_by=("dt",)))
    backend.put(continuous("c.db.other", MINUTE, last_refresh_at=T0))
    backend.script("c.db.a", RefreshKind.NOOP)
    manager = make_manager()
    manager.step()

    future = manager.refresh_now("c.db.a", {"dt": "2025-01-01"}, cascade=True)
    manager.step()
    assert future.result(0).kind is RefreshKind.NOOP
    assert ran(backend) == [("c.db.a", "manual"), ("c.db.b", "cascade"), ("c.db.c", "cascade")]
    partitions = {r.table: r.partition for r in backend.requests}
    assert partitions == {"c.db.a": (("dt", "2025-01-01"),), "c.db.b": (("dt", "2025-01-01"),), "c.db.c": ()}


def test_a_cascade_future_completes_when_the_whole_cascade_has(
    backend: FakeBackend, make_manager: ManagerFactory, executor: ManualExecutor
) -> None:
    backend.put(continuous("c.db.a", MINUTE, last_refresh_at=T0))
    backend.put(continuous("c.db.b", MINUTE, upstream=("c.db.a",), last_refresh_at=T0))
    manager = make_manager(deferred=True)
    manager.step()
    executor.run_all()
    backend.requests.clear()

    future = manager.refresh_now("c.db.a", cascade=True)
    manager.step()
    executor.run_all()  # a committed; b is now due
    assert not future.done()
    manager.step()
    executor.run_all()  # b committed
    assert future.result(0).kind is RefreshKind.FULL
    assert ran(backend) == [("c.db.a", "manual"), ("c.db.b", "cascade")]


def test_a_failure_downstream_fails_the_cascade_future(backend: FakeBackend, make_manager: ManagerFactory) -> None:
    backend.put(continuous("c.db.a", MINUTE, last_refresh_at=T0))
    backend.put(continuous("c.db.b", MINUTE, upstream=("c.db.a",), last_refresh_at=T0))
    backend.script("c.db.b", RuntimeError("boom in b"))
    manager = make_manager()
    manager.step()

    future = manager.refresh_now("c.db.a", cascade=True)
    manager.step()
    with pytest.raises(RuntimeError, match="boom in b"):
        future.result(0)


def test_a_backfill_partition_does_not_move_the_schedule(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    manager = make_manager()
    manager.step()
    clock.advance(seconds=30)
    manager.refresh_now("c.db.t", [("dt", "2024-12-31")])
    [request] = manager.step()
    assert request.partition == (("dt", "2024-12-31"),)
    assert manager.status("c.db.t").next_refresh_at == T0 + MINUTE
    manager.suspend("c.db.t")
    manager.resume("c.db.t")  # re-planned from the last whole-table refresh, not from the backfill
    assert manager.status("c.db.t").next_refresh_at == T0 + MINUTE


def test_concurrency_is_capped_and_due_work_starts_by_deadline(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    for name, offset in [("c.db.t1", 30), ("c.db.t2", 10), ("c.db.t3", 20)]:
        backend.put(continuous(name, MINUTE, last_refresh_at=T0 + offset * SECOND))
    manager = make_manager(deferred=True, max_concurrent_jobs=2)
    manager.step()
    clock.advance(minutes=2)

    assert [r.table for r in manager.step()] == ["c.db.t2", "c.db.t3"]
    assert manager.step() == []
    assert executor.run_next()
    assert [r.table for r in manager.step()] == ["c.db.t1"]
    assert [s.state for s in manager.statuses()] == [JobState.RUNNING, JobState.SCHEDULED, JobState.RUNNING]
