"""One refresher per table: two managers (two "processes") on one catalog and one lease map, on a fake clock.

Each manager has its own fake backend (what *it* refreshed) over the same tables, and both share one
:class:`FakeLeaseStore` with the catalog's compare-and-set.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from manager_helpers import MINUTE, RETRY, T0, continuous

from mt_magic.runtime.manager.lease_keeper import LeaseKeeper, LeaseWishes, plan_leases
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.testing import FakeBackend, FakeClock, FakeLeaseStore, ManualExecutor

TTL = timedelta(seconds=30)
TABLES = ("mt.db.a", "mt.db.b")


class Process:
    """A manager with its own backend and executor, holding leases as ``name``."""

    def __init__(self, name: str, store: FakeLeaseStore, clock: FakeClock, *, deferred: bool = False) -> None:
        self.backend = FakeBackend([continuous(t) for t in TABLES], clock=clock)
        self.executor = ManualExecutor(inline=not deferred)
        self.keeper = LeaseKeeper(store, name, TTL)
        self.manager = RefreshManager(
            self.backend, clock=clock, executor=self.executor, retry=RETRY, rng=random.Random(1), leases=self.keeper
        )

    def ran(self) -> list[tuple[str, str]]:
        return [(r.table, r.trigger.value) for r in self.backend.requests]


@pytest.fixture
def store() -> FakeLeaseStore:
    return FakeLeaseStore()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def test_only_the_lease_holder_refreshes_and_both_show_who_it_is(store, clock):
    a, b = Process("A", store, clock), Process("B", store, clock)
    a.manager.step()
    b.manager.step()
    for _ in range(3):
        clock.advance(MINUTE)
        a.manager.step()
        b.manager.step()
    assert store.holders() == {"mt.db.a": "A", "mt.db.b": "A"}
    assert sorted(a.ran()) == sorted([(t, trigger) for t in TABLES for trigger in ("catch-up", *["scheduled"] * 3)])
    assert b.ran() == []
    assert [(s.refreshed_by, s.refreshed_here) for s in b.manager.statuses()] == [("A", False)] * 2
    assert [(s.refreshed_by, s.refreshed_here) for s in a.manager.statuses()] == [("A", True)] * 2


def test_a_stopped_holder_releases_and_the_other_takes_over_at_its_next_pass(store, clock):
    a, b = Process("A", store, clock), Process("B", store, clock)
    a.manager.step()
    b.manager.step()
    assert a.manager.stop()
    assert store.holders() == {}
    clock.advance(seconds=3)
    b.manager.step()
    assert store.holders() == {"mt.db.a": "B", "mt.db.b": "B"}
    assert sorted(b.ran()) == [("mt.db.a", "catch-up"), ("mt.db.b", "catch-up")]


def test_a_dead_holders_leases_are_taken_over_only_after_they_expire(store, clock):
    a, b = Process("A", store, clock), Process("B", store, clock)
    a.manager.step()  # then A dies: it never steps (renews) again
    clock.advance(TTL - timedelta(seconds=1))
    b.manager.step()
    assert b.ran() == [] and store.holders()["mt.db.a"] == "A"
    clock.advance(seconds=4)  # expired, and B's next lease pass is due
    b.manager.step()
    assert store.holders() == {"mt.db.a": "B", "mt.db.b": "B"}
    assert sorted(b.ran()) == [("mt.db.a", "catch-up"), ("mt.db.b", "catch-up")]


def test_a_manual_refresh_elsewhere_waits_for_the_running_refresh_then_gets_the_lease(store, clock):
    a, b = Process("A", store, clock, deferred=True), Process("B", store, clock)
    a.manager.step()  # A holds both; its catch-up runs are submitted, not yet run
    b.manager.step()
    future = b.manager.refresh_now("mt.db.a")
    clock.advance(seconds=1)
    b.manager.step()  # asks A for the lease
    a.manager.step()  # A is still refreshing mt.db.a: it keeps the lease
    b.manager.step()
    assert not future.done() and b.ran() == [] and store.holders()["mt.db.a"] == "A"
    assert a.executor.run_all() == 2  # A's refreshes end
    clock.advance(seconds=3)
    a.manager.step()  # idle now: hands mt.db.a over, keeps mt.db.b
    assert a.executor.run_all() == 0, "A must not start mt.db.a again once asked for it"
    b.manager.step()
    assert future.result(timeout=0).kind.value == "full"
    assert b.ran() == [("mt.db.a", "manual")]
    assert store.holders() == {"mt.db.a": "B", "mt.db.b": "A"}
    assert a.manager.status("mt.db.a").refreshed_by == "B"


def test_a_holder_that_lost_its_lease_mid_refresh_cancels_that_refresh(store, clock):
    a, b = Process("A", store, clock, deferred=True), Process("B", store, clock)
    a.manager.step()
    clock.advance(TTL + timedelta(seconds=1))  # A's refreshes hang, A cannot renew (say, a long GC pause)
    b.manager.step()
    assert store.holders() == {"mt.db.a": "B", "mt.db.b": "B"}
    a.manager.step()
    groups = {r.job_group for r in a.backend.requests} | {
        job.request.job_group for job in a.manager._state.jobs.values()
    }
    assert set(a.backend.cancelled) == groups and len(groups) == 2


def test_leases_changed_by_another_process_in_between_are_read_again(store, clock):
    """A write planned on a stale map loses the compare-and-set and is planned again on the new map."""
    keeper = LeaseKeeper(store, "A", TTL)
    stale = store.read()
    store.write(stale, plan_leases({}, "B", LeaseWishes(frozenset({"mt.db.a"})), clock(), TTL))
    with pytest.raises(Exception, match="not 0"):
        store.write(stale, plan_leases({}, "A", LeaseWishes(frozenset({"mt.db.a"})), clock(), TTL))
    keeper.sync(LeaseWishes(frozenset({"mt.db.a", "mt.db.b"})), clock())
    assert store.holders() == {"mt.db.a": "B", "mt.db.b": "A"}


def test_an_unreachable_lease_map_pauses_work_until_the_catalog_answers(store, clock):
    a = Process("A", store, clock)
    store.unavailable = "connection refused"
    a.manager.step()
    assert a.manager.paused and a.ran() == []
    store.unavailable = None
    clock.advance(MINUTE)
    a.manager.step()
    assert not a.manager.paused
    assert sorted(a.ran()) == [("mt.db.a", "catch-up"), ("mt.db.b", "catch-up")]


def test_a_table_on_airflow_is_shown_but_never_scheduled_or_leased_here(store, clock):
    """Airflow's task takes the lease itself (``python -m mt_magic refresh``); the kernel keeps out of its way."""
    from dataclasses import replace

    from mt_magic.vocabulary import WorkflowSchedulerKind

    a = Process("A", store, clock)
    a.backend.tables["mt.db.b"] = replace(a.backend.tables["mt.db.b"], scheduler=WorkflowSchedulerKind.AIRFLOW)
    a.manager.step()
    for _ in range(3):
        clock.advance(MINUTE)
        a.manager.step()
    assert store.holders() == {"mt.db.a": "A"}
    assert {table for table, _ in a.ran()} == {"mt.db.a"}
    statuses = a.manager.statuses()  # still on the card and in %mt, saying who runs it
    assert [(s.name, s.scheduler) for s in statuses] == [
        ("mt.db.a", WorkflowSchedulerKind.KERNEL),
        ("mt.db.b", WorkflowSchedulerKind.AIRFLOW),
    ]


def test_a_lease_pass_that_changes_nothing_does_not_wake_the_loop_again(store, clock):
    """The lease pass runs every few seconds; waking the thread after it made each such step run twice (issue 37:
    an idle kernel's per-table work per step, twice as often)."""
    a = Process("A", store, clock)
    a.manager.step()  # takes both leases, runs the catch-ups
    clock.advance(seconds=4)  # the next lease pass is due; no renewal, no run
    a.manager._runner.wake.clear()
    a.manager.step()
    assert store.holders() == {"mt.db.a": "A", "mt.db.b": "A"}
    assert not a.manager._runner.wake.is_set()


def test_an_idle_daily_table_holds_no_lease_until_its_run_comes_near(store, clock):
    """Issue 52: a lease exists only while a refresh may run, so an idle table costs the lease map nothing."""
    from manager_helpers import full, ran

    backend = FakeBackend([full("mt.db.daily", cron="0 0 * * *", freshness=timedelta(days=1))], clock=clock)
    keeper = LeaseKeeper(store, "A", TTL)
    manager = RefreshManager(
        backend, clock=clock, executor=ManualExecutor(inline=True), retry=RETRY, rng=random.Random(1), leases=keeper
    )
    manager.step()
    manager.step()
    assert ran(backend) == [("mt.db.daily", "catch-up")]
    clock.advance(seconds=3)
    manager.step()  # the next run is at midnight, 14 hours away: the lease is given back
    assert store.holders() == {}
    writes = store.writes
    for _ in range(20):
        clock.advance(seconds=3)
        manager.step()
    assert store.writes == writes and store.holders() == {}  # idle: the map is read, never written
    assert manager.status("mt.db.daily").refreshed_by is None

    clock.advance(T0.replace(hour=23, minute=59) - clock())  # a minute before midnight: within two lease lives
    manager.step()
    assert store.holders() == {"mt.db.daily": "A"}
    clock.advance(MINUTE)
    manager.step()
    manager.step()
    assert ran(backend)[-1] == ("mt.db.daily", "scheduled")
    clock.advance(seconds=3)
    manager.step()
    assert store.holders() == {}
