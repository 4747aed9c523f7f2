"""Fake-clock regressions for what the live tests (tests/live) found on real Spark and a real catalog."""

from __future__ import annotations

from datetime import timedelta

from manager_helpers import MINUTE, T0, ManagerFactory, continuous

from mt_magic.runtime.status import EventKind, RefreshEvent
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState

SECOND = timedelta(seconds=1)


def test_a_cancelled_job_that_keeps_running_is_cancelled_again_each_progress_tick(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    """Spark cancels only a group's active jobs: a write submitted just after the cancel would run to the end."""
    backend.put(continuous("c.db.t", MINUTE))
    manager = make_manager(deferred=True, progress_every=SECOND)
    [request] = manager.step()
    manager.suspend("c.db.t")
    assert backend.cancelled == [request.job_group]

    manager.step()
    clock.advance(seconds=0.5)
    manager.step()
    assert backend.cancelled == [request.job_group]  # not before progress_every
    clock.advance(seconds=0.5)
    manager.step()
    clock.advance(seconds=1)
    manager.step()
    assert backend.cancelled == [request.job_group] * 3

    executor.run_all()  # the job ends: no more cancels
    clock.advance(seconds=5)
    manager.step()
    assert backend.cancelled == [request.job_group] * 3
    assert manager.status("c.db.t").state is JobState.SUSPENDED


def test_the_thread_wakes_up_to_cancel_again(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", timedelta(hours=1)))
    manager = make_manager(deferred=True, progress_every=SECOND, staleness_every=timedelta(hours=1))
    manager.step()
    manager.suspend("c.db.t")
    manager.step()
    assert manager._runner.seconds_to_next_wakeup() == 1.0


def test_the_success_event_carries_the_staleness_after_the_commit(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    backend.pending["c.db.t"] = T0 - 30 * SECOND
    manager = make_manager()
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    manager.step()
    assert manager.status("c.db.t").staleness == 30 * SECOND

    clock.advance(minutes=1)
    manager.step()  # the scheduled refresh commits and catches up (the fake clears pending_since)

    [succeeded] = [e for e in events if e.kind is EventKind.REFRESH_SUCCEEDED]
    assert succeeded.status.staleness == timedelta(0)
    assert succeeded.status.last_refresh.staleness_before == 90 * SECOND


def test_staleness_is_polled_several_times_per_freshness_period(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    """A 5-second table whose staleness is cached for 5 seconds reports a lag it no longer has (or misses one)."""
    backend.put(continuous("c.db.fast", 5 * SECOND, last_refresh_at=T0))
    backend.put(continuous("c.db.slow", 10 * MINUTE, last_refresh_at=T0))
    manager = make_manager(staleness_every=5 * SECOND)
    manager.step()
    for _ in range(5):
        clock.advance(seconds=1)
        manager.step()
    assert backend.count("pending_since", "c.db.fast") >= 6  # every second (the floor), plus after refreshes
    assert backend.count("pending_since", "c.db.slow") == 1  # every max(staleness_every, 1 % of 10 min = 6 s)
    assert manager._runner.seconds_to_next_wakeup() <= 1.0


def test_an_idle_daily_table_is_polled_by_its_freshness_not_every_few_seconds(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    """Issue 37: a kernel holding 120 daily tables polled each every 5 s (12 CPU-seconds a minute, idle). A table
    learns of a source change within 1 % of its freshness: 14.4 minutes for a daily one, 36 s for an hourly one."""
    backend.put(continuous("c.db.daily", 24 * 60 * MINUTE, last_refresh_at=T0))
    backend.put(continuous("c.db.hourly", 60 * MINUTE, last_refresh_at=T0))
    manager = make_manager(staleness_every=5 * SECOND)
    manager.step()
    for _ in range(60):  # ten minutes
        clock.advance(seconds=10)
        manager.step()
    assert backend.count("pending_since", "c.db.daily") == 1
    assert backend.count("pending_since", "c.db.hourly") == 16  # every 36 s: at 0, 40, …, 600 s with 10-s steps
    clock.advance(seconds=5 * 60)  # 15 minutes: past a hundredth of a day
    manager.step()
    assert backend.count("pending_since", "c.db.daily") == 2


def test_a_stopped_manager_is_not_kept_alive_by_its_exit_hook(backend: FakeBackend, clock: FakeClock) -> None:
    """Each %unload_ext / %load_ext makes a new manager; threading's exit hooks cannot be unregistered."""
    import gc
    import weakref

    from mt_magic.runtime.manager.refresh_manager import RefreshManager

    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    manager = RefreshManager(backend, clock=clock)
    manager.start()
    assert manager.stop(timeout=5)
    ref = weakref.ref(manager)
    del manager
    gc.collect()
    assert ref() is None


class MissesFirstCancel(FakeBackend):
    """Spark cancels only the jobs a group has right now: a cancel that arrives before the write job starts
    cancels nothing. This backend ignores the first cancel of every group the same way."""

    def cancel(self, job_group: str) -> None:
        self.calls.append(("cancel-seen", job_group))
        if self.count("cancel-seen", job_group) > 1:
            super().cancel(job_group)


def threaded_manager(backend: FakeBackend):
    from mt_magic.runtime.manager.refresh_manager import RefreshManager

    quiet = timedelta(hours=1)
    return RefreshManager(backend, progress_every=timedelta(seconds=0.1), rediscover_every=quiet, staleness_every=quiet)


def test_the_scheduler_thread_cancels_again_a_job_whose_first_cancel_was_missed() -> None:
    backend = MissesFirstCancel([continuous("c.db.t", MINUTE)], block_timeout=10)
    backend.block("c.db.t")
    manager = threaded_manager(backend)
    manager.start()
    try:
        request = backend.wait_running("c.db.t")
        manager.suspend("c.db.t")
        assert manager.wait_idle(timeout=5)
        assert backend.count("cancel-seen", request.job_group) >= 2
        assert manager.status("c.db.t").state is JobState.SUSPENDED
        assert manager.status("c.db.t").last_refresh is None
    finally:
        assert manager.stop(timeout=5)


def test_stop_cancels_again_a_job_whose_first_cancel_was_missed() -> None:
    backend = MissesFirstCancel([continuous("c.db.t", MINUTE)], block_timeout=10)
    backend.block("c.db.t")
    manager = threaded_manager(backend)
    manager.start()
    request = backend.wait_running("c.db.t")
    assert manager.stop(timeout=5), "stop waited for a job it had cancelled only once"
    assert backend.count("cancel-seen", request.job_group) >= 2
