"""Control calls take effect at once: suspend, resume, drop, ALTER (upsert/reload), CREATE (add)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from manager_helpers import MINUTE, T0, ManagerFactory, continuous, full, ran

from mt_magic.errors import NoSuchMaterializedTableError, RefreshCancelledError
from mt_magic.runtime.status import EventKind, RefreshEvent
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState, RefreshTrigger


@pytest.fixture
def running(backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory):
    """A manager whose table c.db.t has a refresh submitted (RUNNING) but not yet executed."""
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    manager = make_manager(deferred=True)
    manager.step()
    clock.advance(minutes=1)
    [request] = manager.step()
    assert manager.status("c.db.t").state is JobState.RUNNING
    return manager, request


def test_suspend_during_a_run_cancels_it_and_nothing_counts(
    running, backend: FakeBackend, executor: ManualExecutor
) -> None:
    manager, request = running
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    waiter = manager.refresh_now("c.db.t")

    manager.suspend("c.db.t")
    assert backend.cancelled == [request.job_group]
    assert manager.status("c.db.t").state is JobState.SUSPENDED
    executor.run_all()  # the refresh sees its cancelled job group and raises RefreshCancelledError
    manager.step()

    status = manager.status("c.db.t")
    assert (status.state, status.last_refresh, status.consecutive_failures, status.last_error) == (
        JobState.SUSPENDED,
        None,
        0,
        None,
    )
    assert status.next_refresh_at is None
    with pytest.raises(RefreshCancelledError, match="c.db.t"):
        waiter.result(0)
    assert EventKind.REFRESH_SUCCEEDED not in [e.kind for e in events]
    assert [e.status.state for e in events if e.status] == [JobState.SUSPENDED, JobState.SUSPENDED]
    manager.suspend("c.db.t")  # idempotent
    assert backend.cancelled == [request.job_group]


def test_a_refresh_that_returns_after_cancel_is_not_counted(
    running, backend: FakeBackend, executor: ManualExecutor
) -> None:
    manager, request = running
    manager.suspend("c.db.t")
    backend.cancelled.clear()  # the cancel arrives too late: the refresh returns normally
    executor.run_all()
    assert manager.status("c.db.t").last_refresh is None


def test_resume_options_reach_the_requests_of_that_resumption_only(
    running, clock: FakeClock, executor: ManualExecutor
) -> None:
    manager, _ = running
    manager.suspend("c.db.t")
    executor.run_all()
    clock.advance(minutes=5)
    assert manager.step() == []

    manager.resume("c.db.t", {"spark.sql.shuffle.partitions": "4"})
    assert manager.status("c.db.t").state is JobState.SCHEDULED
    [request] = manager.step()
    assert request.options == (("spark.sql.shuffle.partitions", "4"),)
    assert request.trigger is RefreshTrigger.SCHEDULED
    executor.run_all()

    manager.suspend("c.db.t")
    manager.refresh_now("c.db.t")
    [manual] = manager.step()  # a manual refresh while suspended is not part of that resumption
    assert manual.options == ()
    executor.run_all()
    manager.resume("c.db.t")
    clock.advance(minutes=1)
    [request] = manager.step()
    assert request.options == ()


def test_drop_during_a_run_cancels_it_and_forgets_the_table(
    running, backend: FakeBackend, clock: FakeClock, executor: ManualExecutor
) -> None:
    manager, request = running
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    waiter = manager.refresh_now("c.db.t")

    manager.remove("c.db.t")
    assert backend.cancelled == [request.job_group]
    with pytest.raises(NoSuchMaterializedTableError, match="'c.db.t'"):
        manager.status("c.db.t")
    with pytest.raises(RefreshCancelledError, match="dropped"):
        waiter.result(0)
    executor.run_all()
    clock.advance(minutes=5)  # rediscovery still lists it until the catalog drop lands: ignored
    assert manager.step() == [] and manager.statuses() == []
    manager.step()
    assert [e.kind for e in events] == [EventKind.TABLE_REMOVED]
    assert events[0].status is None

    backend.drop("c.db.t")
    clock.advance(minutes=1)
    manager.step()
    backend.put(continuous("c.db.t", MINUTE))  # re-created elsewhere: discovered again
    clock.advance(minutes=1)
    assert [r.trigger for r in manager.step()] == [RefreshTrigger.CATCH_UP]


def test_drop_then_create_waits_for_the_old_job_to_end(running, backend: FakeBackend, executor: ManualExecutor) -> None:
    manager, _ = running
    manager.remove("c.db.t")
    manager.add(continuous("c.db.t", MINUTE))
    assert manager.step() == []
    executor.run_all()
    [request] = manager.step()
    assert request.trigger is RefreshTrigger.INITIAL


def test_upsert_during_a_run_cancels_and_starts_over_with_the_new_schedule(
    running, backend: FakeBackend, clock: FakeClock, executor: ManualExecutor
) -> None:
    manager, request = running
    waiter = manager.refresh_now("c.db.t")
    manager.upsert(continuous("c.db.t", 5 * MINUTE, last_refresh_at=T0))
    assert backend.cancelled == [request.job_group]
    executor.run_all()

    [again] = manager.step()
    assert again.trigger is RefreshTrigger.MANUAL
    executor.run_all()
    assert waiter.result(0).snapshot_id is not None
    assert manager.status("c.db.t").next_refresh_at == clock() + 5 * MINUTE
    assert manager.status("c.db.t").freshness == 5 * MINUTE


def test_add_schedules_the_initial_refresh_at_once(backend: FakeBackend, make_manager: ManagerFactory) -> None:
    manager = make_manager()
    manager.step()
    table = full("c.db.new", "0 * * * *")
    backend.put(table)
    created = manager.add(table)
    assert manager.status("c.db.new").state is JobState.SCHEDULED
    assert created is not None and not created.done()
    [request] = manager.step()
    assert (request.trigger, request.scheduled_time) == (RefreshTrigger.INITIAL, T0)
    assert created.result(0).snapshot_id == backend.histories["c.db.new"][0].snapshot_id
    assert manager.add(full("c.db.other", "0 * * * *"), initial=False) is None
    assert manager.status("c.db.new").next_refresh_at == T0 + 60 * MINUTE


def test_upsert_rejects_a_bad_cron_and_keeps_the_old_definition(
    backend: FakeBackend, make_manager: ManagerFactory
) -> None:
    backend.put(full("c.db.f", "0 * * * *", last_refresh_at=T0))
    manager = make_manager()
    manager.step()
    with pytest.raises(ValueError, match="'0 \\* \\*'"):
        manager.upsert(full("c.db.f", "0 * *"))
    assert manager.status("c.db.f").next_refresh_at == T0 + 60 * MINUTE


def test_suspended_in_the_catalog_is_followed_but_a_local_suspend_is_not_undone(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    manager = make_manager(rediscover_every=MINUTE)
    manager.step()
    manager.suspend("c.db.t")
    clock.advance(minutes=2)
    assert manager.step() == []
    assert manager.status("c.db.t").state is JobState.SUSPENDED

    backend.put(replace(backend.tables["c.db.t"], suspended=True))
    clock.advance(minutes=2)
    manager.step()
    backend.put(replace(backend.tables["c.db.t"], suspended=False))  # RESUME from another process
    clock.advance(minutes=2)
    assert [r.table for r in manager.step()] == ["c.db.t"]
    assert ran(backend) == [("c.db.t", "scheduled")]


def test_manual_refresh_runs_even_while_suspended(backend: FakeBackend, make_manager: ManagerFactory) -> None:
    backend.put(continuous("c.db.t", MINUTE, suspended=True))
    manager = make_manager()
    manager.step()
    assert manager.status("c.db.t").state is JobState.SUSPENDED
    future = manager.refresh_now("c.db.t")
    manager.step()
    assert future.result(0).snapshot_id is not None
    assert manager.status("c.db.t").state is JobState.SUSPENDED


def test_control_calls_name_the_unknown_table(make_manager: ManagerFactory) -> None:
    manager = make_manager()
    for call in (manager.refresh_now, manager.suspend, manager.resume, manager.remove):
        with pytest.raises(NoSuchMaterializedTableError, match="'c.db.nope'"):
            call("c.db.nope")
