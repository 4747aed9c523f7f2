"""What readers see: immutable statuses, cached staleness, progress, and the ordered event stream."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta

import pytest
from manager_helpers import MINUTE, T0, ManagerFactory, continuous

from mt_magic.runtime.status import EventKind, JobProgress, RefreshEvent
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState, RefreshKind

SECOND = timedelta(seconds=1)


def test_staleness_is_cached_between_polls_and_zero_after_catching_up(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE, last_refresh_at=T0))
    backend.pending["c.db.t"] = T0 - 30 * SECOND
    manager = make_manager(staleness_every=5 * SECOND)
    assert manager.step() == []
    assert backend.count("pending_since") == 1

    clock.advance(seconds=2)
    for _ in range(10):
        assert manager.status("c.db.t").staleness == 32 * SECOND
    assert manager.status("c.db.t").within_freshness is True
    manager.step()
    assert backend.count("pending_since") == 1

    backend.pending["c.db.t"] = T0 - 90 * SECOND  # an older change is now visible
    clock.advance(seconds=3)
    manager.step()
    assert backend.count("pending_since") == 2
    assert manager.status("c.db.t").staleness == 95 * SECOND
    assert manager.status("c.db.t").within_freshness is False

    manager.refresh_now("c.db.t")
    manager.step()
    assert backend.count("pending_since") == 3  # polled right after the refresh
    assert manager.status("c.db.t").staleness == timedelta(0)
    assert manager.status("c.db.t").last_refresh.staleness_before == 95 * SECOND


def test_staleness_is_unknown_before_the_first_poll(backend: FakeBackend, make_manager: ManagerFactory) -> None:
    table = continuous("c.db.t", MINUTE)
    manager = make_manager()
    manager.add(table, initial=False)
    assert manager.status("c.db.t").staleness is None
    assert manager.status("c.db.t").within_freshness is None


def test_progress_is_polled_while_running_and_published_when_it_changes(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    backend.put(continuous("c.db.t", MINUTE))
    manager = make_manager(deferred=True, progress_every=SECOND)
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    [request] = manager.step()

    backend.progress_by_group[request.job_group] = JobProgress(1, 4)
    clock.advance(seconds=1)
    manager.step()
    clock.advance(seconds=1)
    manager.step()  # unchanged: no event
    backend.progress_by_group[request.job_group] = JobProgress(3, 4)
    manager.step()  # polled less than a second ago: not polled
    clock.advance(seconds=1)
    manager.step()
    progress = [e.status.progress for e in events if e.kind is EventKind.REFRESH_PROGRESS]
    assert progress == [JobProgress(1, 4), JobProgress(3, 4)]
    assert manager.status("c.db.t").progress == JobProgress(3, 4)
    assert backend.count("progress") == 3

    executor.run_all()
    assert manager.status("c.db.t").progress is None


def test_events_are_published_in_order_with_the_status_after_each(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    manager = make_manager()
    manager.step()
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    backend.script("c.db.t", RuntimeError("out of memory"))
    table = continuous("c.db.t", MINUTE)
    backend.put(table)

    manager.add(table)
    manager.step()
    clock.advance(minutes=1)
    manager.step()
    manager.suspend("c.db.t")
    manager.step()

    assert [(e.kind, e.status.state) for e in events] == [
        (EventKind.TABLE_ADDED, JobState.SCHEDULED),
        (EventKind.REFRESH_STARTED, JobState.RUNNING),
        (EventKind.REFRESH_FAILED, JobState.RETRYING),
        (EventKind.REFRESH_STARTED, JobState.RUNNING),
        (EventKind.REFRESH_SUCCEEDED, JobState.SCHEDULED),
        (EventKind.STATE_CHANGED, JobState.SUSPENDED),
    ]
    assert [e.at for e in events] == [T0, T0, T0, T0 + MINUTE, T0 + MINUTE, T0 + MINUTE]
    assert "out of memory" in events[2].message
    assert events[1].message == "initial"
    with pytest.raises(dataclasses.FrozenInstanceError):
        events[0].status.state = JobState.FAILED  # type: ignore[misc,union-attr]


def test_unsubscribe_stops_delivery_and_a_failing_subscriber_is_only_logged(
    backend: FakeBackend, make_manager: ManagerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    backend.put(continuous("c.db.t", MINUTE))
    manager = make_manager()
    kept: list[RefreshEvent] = []
    dropped: list[RefreshEvent] = []

    def broken(event: RefreshEvent) -> None:
        raise RuntimeError("widget bug")

    manager.subscribe(broken)
    manager.subscribe(kept.append)
    unsubscribe = manager.subscribe(dropped.append)
    unsubscribe()
    unsubscribe()
    with caplog.at_level(logging.ERROR, logger="mt_magic.runtime.manager.loop"):
        manager.step()
    assert [e.kind for e in kept] == [EventKind.TABLE_ADDED, EventKind.REFRESH_STARTED, EventKind.REFRESH_SUCCEEDED]
    assert dropped == []
    assert [str(r.exc_info[1]) for r in caplog.records if r.exc_info] == ["widget bug"] * 3
    assert manager.status("c.db.t").last_refresh.kind is RefreshKind.FULL


def test_job_groups_are_unique_per_run(backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory) -> None:
    backend.put(continuous("c.db.t", MINUTE))
    manager = make_manager()
    for _ in range(3):
        manager.step()
        clock.advance(minutes=1)
    assert [r.job_group for r in backend.requests] == [f"mt-refresh:c.db.t:{n}" for n in (1, 2, 3)]


def test_statuses_are_sorted_snapshots(backend: FakeBackend, make_manager: ManagerFactory) -> None:
    backend.put(continuous("c.db.b", MINUTE, upstream=("c.db.a",), mode_reason="incremental (append)"))
    backend.put(continuous("c.db.a", MINUTE))
    manager = make_manager()
    manager.step()
    a, b = manager.statuses()
    assert (a.name, b.name, b.upstream, b.mode_reason) == ("c.db.a", "c.db.b", ("c.db.a",), "incremental (append)")
    assert a.last_refresh is not None and a.last_refresh.rows_written == 10


def test_a_table_reading_a_behind_table_is_behind_through_every_level(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    """Rows read from a behind materialized table are behind too (the materialized-view draft's recursive check):
    each level's staleness is measured from the oldest unreflected change upstream, named on the badge."""
    from mt_magic.widgets.badges import freshness_badge

    backend.put(continuous("c.db.a", MINUTE, last_refresh_at=T0))
    backend.put(continuous("c.db.b", MINUTE, upstream=("c.db.a",), last_refresh_at=T0))
    backend.put(continuous("c.db.c", MINUTE, upstream=("c.db.b",), last_refresh_at=T0))
    backend.pending["c.db.a"] = T0 - 30 * SECOND  # only a's source changed
    manager = make_manager(staleness_every=5 * SECOND)
    manager.step()
    a, b, c = manager.statuses()
    assert (a.staleness, a.behind_upstream) == (30 * SECOND, None)
    assert (b.staleness, b.behind_upstream) == (30 * SECOND, "c.db.a")
    assert (c.staleness, c.behind_upstream) == (30 * SECOND, "c.db.a")
    assert "30s behind (upstream a)" in freshness_badge(c).label

    backend.pending["c.db.b"] = T0 - 90 * SECOND  # b's own source (a) holds an older change: its own counts
    clock.advance(seconds=5)
    manager.step()
    b, c = manager.status("c.db.b"), manager.status("c.db.c")
    assert (b.staleness, b.behind_upstream) == (95 * SECOND, None)
    assert (c.staleness, c.behind_upstream) == (95 * SECOND, "c.db.b")

    backend.pending["c.db.a"] = backend.pending["c.db.b"] = None  # caught up everywhere
    clock.advance(seconds=5)
    manager.step()
    assert [(s.staleness, s.behind_upstream) for s in manager.statuses()] == [(timedelta(0), None)] * 3
    assert "up to date" in freshness_badge(manager.status("c.db.c")).label


def test_statuses_of_some_names_snapshot_only_those(
    backend: FakeBackend, make_manager: ManagerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SHOW MATERIALIZED TABLES IN ns`` asks for the statuses of its listed tables only: among 200 others the
    listing costs its own tables' snapshots (it took every table's, 12 → 21 ms at 120 idle tables)."""
    for index in range(200):
        backend.put(continuous(f"c.other.t{index}", MINUTE))
    backend.put(continuous("c.db.b", MINUTE))
    backend.put(continuous("c.db.a", MINUTE))
    manager = make_manager()
    manager.step()
    snapshot = type(manager._state).snapshot
    taken: list[str] = []

    def counted(state, entry, now):  # type: ignore[no-untyped-def]
        taken.append(entry.name)
        return snapshot(state, entry, now)

    monkeypatch.setattr(type(manager._state), "snapshot", counted)
    listed = manager.statuses(["c.db.b", "c.db.a", "c.db.gone"])
    monkeypatch.undo()
    assert [s.name for s in listed] == ["c.db.a", "c.db.b"] and sorted(taken) == ["c.db.a", "c.db.b"]
    assert len(manager.statuses()) == 202
