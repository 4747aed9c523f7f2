"""A refresh refused because another engine's view version made the table invalid (issue 50): the manager records
the refusal with its Fix, retries neither at a backoff's pace nor at the schedule, does not give up either, and
schedules the table again once a statement redefines it. A manual refresh still runs, and is refused again."""

from __future__ import annotations

import pytest
from manager_helpers import MINUTE, T0, ManagerFactory, continuous, ran

from mt_magic.errors import InvalidTableError
from mt_magic.runtime.status import EventKind, RefreshEvent
from mt_magic.testing import FakeBackend, FakeClock
from mt_magic.vocabulary import JobState

TABLE = "c.db.t"
REFUSAL = InvalidTableError("its view is another engine's", statement=TABLE, fix="CREATE OR ALTER … AS, or DROP it")


def test_a_refused_refresh_is_not_retried_until_the_table_is_redefined(
    backend: FakeBackend, clock: FakeClock, make_manager: ManagerFactory
) -> None:
    backend.put(continuous(TABLE, MINUTE, last_refresh_at=T0))
    manager = make_manager()
    events: list[RefreshEvent] = []
    manager.subscribe(events.append)
    manager.step()
    backend.refusal = REFUSAL
    clock.set(T0 + MINUTE)
    manager.step()
    assert ran(backend) == [(TABLE, "scheduled")]
    for _ in range(60):  # half an hour of steps: past every backoff and every scheduled time, nothing is tried
        clock.advance(seconds=30)
        manager.step()
    assert ran(backend) == [(TABLE, "scheduled")]
    status = manager.status(TABLE)
    assert status.state is not JobState.RETRYING and status.state is not JobState.FAILED
    assert status.last_error == f"InvalidTableError: {REFUSAL}" and "Fix: CREATE OR ALTER" in status.last_error
    failed = [e.message for e in events if e.kind is EventKind.REFRESH_FAILED]
    assert failed == [f"InvalidTableError: {REFUSAL}; no scheduled refresh until the table is redefined or dropped"]

    future = manager.refresh_now(TABLE)  # by hand: it runs and is refused again
    manager.step()
    with pytest.raises(InvalidTableError, match="Fix: CREATE OR ALTER"):
        future.result(0)
    assert len(ran(backend)) == 2

    backend.refusal = None  # CREATE OR ALTER … AS took the view over: the manager adopts the definition
    manager.upsert(continuous(TABLE, MINUTE, last_refresh_at=T0))
    clock.advance(minutes=1)
    manager.step()
    assert ran(backend)[2:] == [(TABLE, "scheduled")]
    status = manager.status(TABLE)
    assert status.last_error is None and status.consecutive_failures == 0
