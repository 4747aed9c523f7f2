"""The card of a stalled refresh: a red STALLED badge with how long it ran against its usual, the stall line with
Spark's state, and a Cancel button (shown only while a refresh runs) that stops it through the manager."""

from __future__ import annotations

from widget_helpers import NAME, ManagerActions

from mt_magic.errors import RefreshCancelledError
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.manager.watchdog import StallPolicy
from mt_magic.runtime.status import JobProgress
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState
from mt_magic.widgets.live import LiveViews


def test_a_stalled_refresh_shows_on_the_card_and_cancel_stops_it(
    live: LiveViews,
    manager: RefreshManager,
    backend: FakeBackend,
    clock: FakeClock,
    executor: ManualExecutor,
    actions: ManagerActions,
) -> None:
    card = live.card(NAME)
    assert card.cancel_button.layout.display == "none"
    manager.stall_policy = StallPolicy()  # flagged at 60 s without a measured run
    future = manager.refresh_now(NAME)
    [request] = manager.step()
    assert card.cancel_button.layout.display == "flex" and "mt-stalled" not in card.title.value
    backend.progress_by_group[request.job_group] = JobProgress(0, 1, 1, 1, 1)
    clock.advance(seconds=61)
    manager.step()
    assert 'class="mt-badge mt-stalled"' in card.title.value and "STALLED 1m 01s" in card.title.value
    assert "Spark: 1 job, 1 stage, 1 task running, 0/1 tasks done" in card.details.value
    assert card.progress.bar_style == "danger"

    card.cancel_button.click()
    assert ("cancel", NAME) in actions.calls and "Cancelled the running refresh" in card.message.value
    assert backend.cancelled == [request.job_group]
    executor.run_all()
    card.tick()
    assert future.exception(timeout=0).__class__ is RefreshCancelledError
    assert card.status.state is JobState.SCHEDULED and card.cancel_button.layout.display == "none"
    assert "mt-stalled" not in card.title.value
    [scheduled] = manager.step()  # its schedule goes on: the run it was due for starts, not flagged
    assert scheduled.job_group != request.job_group and card.status.stall is None
