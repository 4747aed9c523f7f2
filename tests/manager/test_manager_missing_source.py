"""A plain source dropped under a scheduled table (issue 38): the manager does not retry the refresh at its schedule
(nor at a backoff's pace) while the source is missing, does not give up on the table either, shows why (the status's
``missing_source``, whose message carries the Fix) and refreshes it by itself once a staleness poll finds the source
again. A manual refresh still runs, and fails with the source's error."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from manager_helpers import MINUTE, T0, ManagerFactory, continuous, ran

from mt_magic.errors import NoSuchSourceTableError
from mt_magic.runtime.status import EventKind, RefreshEvent
from mt_magic.testing import FakeBackend, FakeClock
from mt_magic.vocabulary import JobState

TABLE, SOURCE = "c.db.t", "c.db.src"


class SourceBackend(FakeBackend):
    """A backend whose tables read ``SOURCE``: while it is dropped, staleness polls and refreshes raise as the
    engine's do (``NoSuchSourceTableError``)."""

    @property
    def source_exists(self) -> bool:
        return self.refusal is None

    @source_exists.setter
    def source_exists(self, exists: bool) -> None:
        self.refusal = None if exists else NoSuchSourceTableError(TABLE, SOURCE)

    def pending_since(self, table: str) -> datetime | None:
        since = super().pending_since(table)
        if self.refusal is not None:
            raise self.refusal
        return since


@pytest.fixture
def backend(clock: FakeClock) -> SourceBackend:
    return SourceBackend(clock=clock)


def test_a_missing_source_holds_the_schedule_without_giving_up_and_it_resumes_when_the_source_is_back(
    backend: SourceBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous(TABLE, MINUTE, last_refresh_at=T0))
    manager = make_manager(staleness_every=timedelta(seconds=5))
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    manager.step()
    backend.source_exists = False
    for _ in range(120):  # two hours of steps every minute: the table is due at each, and no refresh is tried
        clock.advance(minutes=1)
        manager.step()
    assert ran(backend) == [] and manager.failures(TABLE) == []
    status = manager.status(TABLE)
    assert status.missing_source is not None and status.missing_source.source == SOURCE
    assert status.missing_source.message == str(NoSuchSourceTableError(TABLE, SOURCE))
    assert "Fix: re-create c.db.src, or ALTER MATERIALIZED TABLE c.db.t AS" in status.missing_source.message
    assert (status.state, status.next_refresh_at, status.consecutive_failures) == (JobState.SCHEDULED, None, 0)
    waiting = [e.message for e in events if e.kind is EventKind.STATE_CHANGED and "waits for" in e.message]
    assert waiting == [f"{TABLE} waits for its source {SOURCE}: no refresh until it exists again"]

    future = manager.refresh_now(TABLE)  # a manual refresh runs and says what is missing
    manager.step()
    with pytest.raises(NoSuchSourceTableError, match="Fix: re-create"):
        future.result(0)
    assert ran(backend) == [(TABLE, "manual")]
    assert manager.status(TABLE).state is JobState.SCHEDULED  # held, not "retrying"

    backend.source_exists = True  # re-created: the next staleness poll finds it and the held run starts at once
    clock.advance(seconds=5)
    manager.step()
    assert len(ran(backend)) == 2  # the held run (the failed manual one, requeued), in the same pass
    status = manager.status(TABLE)
    assert status.missing_source is None and status.last_error is None and status.consecutive_failures == 0
    assert status.state is JobState.SCHEDULED and status.next_refresh_at == clock() + MINUTE
    back = [e.message for e in events if e.kind is EventKind.STATE_CHANGED and e.message.startswith(SOURCE)]
    assert back == [f"{SOURCE} exists again: {TABLE} refreshes"]


def test_a_refresh_that_finds_the_source_gone_holds_the_schedule_too(
    backend: SourceBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    """Dropped between a staleness poll and the scheduled refresh: one failed attempt, then no other until the
    source is back (before: retried after 10 s, 20 s, …, then FAILED until ALTER … RESUME)."""
    backend.put(continuous(TABLE, MINUTE, last_refresh_at=T0))
    manager = make_manager(staleness_every=timedelta(hours=1))  # polled every 12 s (a fifth of its freshness)
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    manager.step()
    clock.set(T0 + timedelta(seconds=55))
    manager.step()  # a poll: the source is there
    backend.source_exists = False
    clock.set(T0 + MINUTE)
    manager.step()  # due, not polled again yet: the refresh finds the source gone
    assert ran(backend) == [(TABLE, "scheduled")]
    failed = [e.message for e in events if e.kind is EventKind.REFRESH_FAILED]
    assert failed == [
        f"NoSuchSourceTableError: {NoSuchSourceTableError(TABLE, SOURCE)}; no refresh until {SOURCE} exists again"
    ]
    for _ in range(60):
        clock.advance(seconds=30)
        manager.step()
    assert ran(backend) == [(TABLE, "scheduled")]
    status = manager.status(TABLE)
    assert status.state is JobState.SCHEDULED and status.missing_source is not None and status.next_refresh_at is None

    backend.source_exists = True
    clock.advance(seconds=12)
    manager.step()
    assert ran(backend) == [(TABLE, "scheduled")] * 2
    assert manager.status(TABLE).consecutive_failures == 0
