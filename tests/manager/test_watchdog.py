"""The stall watchdog on the fake clock and backend: a run past max(factor × its usual duration, floor) is flagged
STALLED (status, event, card, dashboard, history), one past the limit is cancelled and counted as a failure at once
— its slot free, its late answer ignored — and the table retries on its backoff."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from manager_helpers import RETRY, T0, ManagerFactory, continuous

from mt_magic.errors import RefreshCancelledError, RefreshTimeLimitError
from mt_magic.runtime.inspect.history import with_stall_marks
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.manager.watchdog import StallPolicy, usual_duration
from mt_magic.runtime.status import EventKind, JobProgress, RefreshEvent, RefreshRecord
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState, RefreshKind, RefreshTrigger, RunHealth
from mt_magic.widgets.render import card_text, dashboard_html, dashboard_text
from mt_magic.widgets.static_views import HistoryView

NAME = "c.db.t"
POLICY = StallPolicy(factor=4, floor=timedelta(seconds=30), limit_factor=10, limit_floor=timedelta(seconds=60))
SECOND = timedelta(seconds=1)


def past(seconds: float, kind: RefreshKind = RefreshKind.INCREMENTAL, error: str | None = None) -> RefreshRecord:
    return RefreshRecord(kind, RefreshTrigger.SCHEDULED, T0, timedelta(seconds=seconds), 1, 1, error=error)


def test_the_usual_duration_is_the_median_of_recent_runs_that_did_work() -> None:
    records = [past(10), past(0.1, RefreshKind.NOOP), past(12), past(500, error="boom"), past(11), past(900)]
    assert usual_duration(records) == timedelta(seconds=11)
    assert usual_duration(records, runs=2) == timedelta(seconds=10)  # the newest two: 10 s and 12 s
    assert usual_duration([past(1, RefreshKind.NOOP)]) is None


def test_thresholds_are_a_multiple_of_the_usual_with_floors() -> None:
    assert (POLICY.flag_after(None), POLICY.limit(None)) == (30 * SECOND, 60 * SECOND)
    assert (POLICY.flag_after(2 * SECOND), POLICY.limit(2 * SECOND)) == (30 * SECOND, 60 * SECOND)
    assert (POLICY.flag_after(20 * SECOND), POLICY.limit(20 * SECOND)) == (80 * SECOND, 200 * SECOND)
    usual = 20 * SECOND
    assert [POLICY.health(s * SECOND, usual) for s in (79, 80, 199, 200)] == [
        RunHealth.ON_TIME,
        RunHealth.STALLED,
        RunHealth.STALLED,
        RunHealth.OVER_LIMIT,
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"factor": 0.5}, "factors must be >= 1"),
        ({"floor": timedelta(0)}, "floor must be positive"),
        ({"limit_factor": 2.0}, "must not come before"),
        ({"limit_floor": timedelta(seconds=10)}, "must not come before"),
    ],
)
def test_a_policy_that_makes_no_sense_is_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        replace(POLICY, **kwargs)


def start_one(
    backend: FakeBackend, make_manager: ManagerFactory, history: list[RefreshRecord]
) -> tuple[RefreshManager, list[RefreshEvent]]:
    backend.put(continuous(NAME, timedelta(minutes=1), last_refresh_at=T0))
    backend.histories[NAME] = history
    manager = make_manager(deferred=True, stall_policy=POLICY)
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    assert manager.step() == []  # discovery: the history read seeds the usual duration
    return manager, events


def test_a_run_far_past_its_usual_duration_is_flagged_and_a_finished_one_keeps_the_mark(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    manager, events = start_one(backend, make_manager, [past(10), past(12), past(11)])
    future = manager.refresh_now(NAME)
    [request] = manager.step()
    group = request.job_group
    backend.progress_by_group[group] = JobProgress(3, 8, active_jobs=1, active_stages=1, running_tasks=0)

    clock.advance(seconds=43)  # usual 11 s: flagged at 44 s
    manager.step()
    assert manager.status(NAME).stall is None
    clock.advance(seconds=1)
    manager.step()
    status = manager.status(NAME)
    assert status.state is JobState.RUNNING and status.stall is not None
    assert (status.stall.usual, status.stall.flagged_after, status.stall.limit) == (
        11 * SECOND,
        44 * SECOND,
        110 * SECOND,
    )
    assert status.stall.spark == JobProgress(3, 8, 1, 1, 0)
    [flagged] = [e for e in events if e.kind is EventKind.STATE_CHANGED and e.message.startswith("stalled")]
    assert flagged.message == "stalled: running 44 s, usually 11.0 s" and flagged.status.stall is not None

    text = card_text(status, None, clock())
    assert "  stalled: running 44s, usually 11s (flagged after 44s; cancelled at 1m 50s) · Spark: 1 job, 1 stage, " in (
        text
    )
    assert "0 tasks running, 3/8 tasks done — no task running" in text
    assert "STALLED running 44s" in dashboard_text([status], clock())
    assert 'class="mt-badge mt-stalled"' in dashboard_html([status], clock())

    clock.advance(seconds=6)
    executor.run_all()  # it finishes after all, before the limit
    manager.step()
    assert future.result(timeout=0).kind is RefreshKind.FULL
    status = manager.status(NAME)
    assert status.stall is None and status.last_refresh is not None
    kept = status.last_refresh.stall
    assert kept is not None and kept.running_for == 50 * SECOND and status.recent[0] is status.last_refresh
    catalog_row = replace(status.last_refresh, stall=None)  # what the catalog's history says of the same commit
    [marked] = with_stall_marks([catalog_row], status.recent)
    assert marked.stall == kept
    assert "STALLED: running 50s, usually 11s" in repr(HistoryView(NAME, [marked]))


def test_past_the_limit_the_run_is_cancelled_counted_as_failed_and_the_retry_succeeds(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    manager, events = start_one(backend, make_manager, [])  # nothing measured: the floors apply
    future = manager.refresh_now(NAME)
    [request] = manager.step()
    group = request.job_group
    clock.advance(seconds=30)
    manager.step()
    assert manager.status(NAME).stall.usual is None
    assert backend.cancelled == []

    clock.advance(seconds=30)
    manager.step()
    assert backend.cancelled == [group]
    status = manager.status(NAME)
    assert (status.state, status.consecutive_failures, status.stall) == (JobState.RETRYING, 1, None)
    assert status.last_error is not None and status.last_error.startswith(
        f"RefreshTimeLimitError: refresh of {NAME} ran past its time limit of 60 s (running 60 s, no usual duration"
    )
    assert "Spark ran no job for it" in status.last_error and "stall_limit_factor" in status.last_error
    with pytest.raises(RefreshTimeLimitError):
        future.result(timeout=0)
    [failure] = manager.failures(NAME)
    assert failure.stall is not None and failure.stall.running_for == 60 * SECOND
    assert [e.kind for e in events][-2:] == [EventKind.STATE_CHANGED, EventKind.REFRESH_FAILED]

    executor.run_all()  # the lost worker answers (cancelled) long after: ignored, not a second failure
    manager.step()
    assert manager.status(NAME).consecutive_failures == 1
    retry_at = manager.status(NAME).next_refresh_at
    assert retry_at is not None and RETRY.base * 0.9 <= retry_at - clock() <= RETRY.base * 1.1

    clock.set(retry_at)
    assert [r.table for r in manager.step()] == [NAME]
    executor.run_all()
    manager.step()
    status = manager.status(NAME)
    assert (status.state, status.consecutive_failures, status.last_error) == (JobState.SCHEDULED, 0, None)


def test_a_slot_given_up_on_is_free_for_another_table(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    backend.put(continuous(NAME, timedelta(minutes=1), last_refresh_at=T0))
    backend.put(continuous("c.db.other", timedelta(minutes=10), last_refresh_at=T0))
    manager = make_manager(deferred=True, stall_policy=POLICY, max_concurrent_jobs=1)
    assert manager.step() == []
    manager.refresh_now(NAME)
    assert [r.table for r in manager.step()] == [NAME]
    manager.refresh_now("c.db.other")
    clock.advance(seconds=59)
    assert manager.step() == []  # the one slot is taken
    clock.advance(seconds=1)
    assert [r.table for r in manager.step()] == ["c.db.other"]  # given up on at 60 s: the slot is free


def test_cancel_stops_the_running_refresh_without_a_failure_and_a_stalled_one_keeps_its_mark(
    backend: FakeBackend, clock: FakeClock, executor: ManualExecutor, make_manager: ManagerFactory
) -> None:
    manager, _ = start_one(backend, make_manager, [past(1)])
    assert manager.cancel(NAME) is False
    future = manager.refresh_now(NAME)
    [request] = manager.step()
    clock.advance(seconds=31)
    manager.step()
    assert manager.cancel(NAME) is True
    assert backend.cancelled == [request.job_group]
    executor.run_all()
    manager.step()
    with pytest.raises(RefreshCancelledError, match="cancelled by the user"):
        future.result(timeout=0)
    status = manager.status(NAME)
    assert (status.state, status.consecutive_failures) == (JobState.SCHEDULED, 0)
    [row] = manager.failures(NAME)
    assert row.error == "cancelled after it stalled: cancelled by the user" and row.stall is not None
