"""A card costs nothing while nothing it shows changes (issue 52), and still shows a change at its next tick.

The feed is the real manager (fake backend and clock), seen through a counter of the statuses the card reads.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from widget_helpers import NAME, T0, ManagerActions, continuous

from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.status import TableStatus
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.widgets.badges import reads_differently_at
from mt_magic.widgets.live import LiveViews


class CountedFeed:
    """The manager as the views' feed, counting the statuses read."""

    def __init__(self, manager: RefreshManager) -> None:
        self.manager, self.reads = manager, 0

    def status(self, name: str) -> TableStatus:
        self.reads += 1
        return self.manager.status(name)

    def statuses(self) -> list[TableStatus]:
        return self.manager.statuses()

    def subscribe(self, callback):  # type: ignore[no-untyped-def]
        return self.manager.subscribe(callback)

    def version(self) -> int:
        return self.manager.version()


def test_an_idle_card_reads_its_status_once_a_minute_and_shows_a_change_at_the_next_tick() -> None:
    clock = FakeClock(T0)
    backend = FakeBackend(clock=clock)
    backend.put(continuous(every=timedelta(days=1), last_refresh_at=T0 - timedelta(hours=5, seconds=30)))
    manager = RefreshManager(
        backend, clock=clock, executor=ManualExecutor(), rng=random.Random(7), staleness_every=timedelta(0)
    )
    manager.step()
    feed = CountedFeed(manager)
    live = LiveViews(feed, ManagerActions(manager, backend), clock=clock, tick_every=None)
    try:
        card = live.card(NAME)
        shown, reads = card.details.value, feed.reads
        assert "(in 18h 59m)" in shown  # the next refresh, a day after the last one (18h 59m 30s from now)
        for _ in range(29):  # 29 ticks of a second: it reads the same until 18h 58m 59s
            clock.advance(seconds=1)
            live.tick()
        assert feed.reads == reads and card.details.value == shown
        for _ in range(2):  # at 18h 59m 00s it reads the same; a second later it has changed
            clock.advance(seconds=1)
            live.tick()
        assert feed.reads == reads + 2 and "(in 18h 58m)" in card.details.value

        backend.pending[NAME] = clock()  # a source commit: no event says so, the staleness poll sees it
        clock.advance(minutes=15)  # a daily table's staleness is polled every 14.4 minutes
        manager.step()
        live.tick()
        assert "measured staleness 15m 00s" in card.details.value
        clock.advance(seconds=1)
        live.tick()  # a growing staleness reads differently every second
        assert "measured staleness 15m 01s" in card.details.value

        reads = feed.reads
        manager.suspend(NAME)  # an event
        live.tick()
        assert feed.reads == reads + 1 and "Resume" == card.suspend_button.description
    finally:
        live.close()


def test_when_a_relative_time_next_reads_differently() -> None:
    now = datetime.fromisoformat("2025-01-01T10:00:00+00:00")

    def wait(at: datetime) -> float:
        return (reads_differently_at(at, now) - now).total_seconds()

    assert wait(now - timedelta(seconds=42.25)) == 0.75  # "42s ago" becomes "43s ago"
    assert wait(now - timedelta(hours=5, seconds=30)) == 30  # "5h 00m ago" becomes "5h 01m ago"
    assert wait(now - timedelta(days=3, minutes=10)) == 50 * 60  # "3d 0h ago" becomes "3d 1h ago"
    assert wait(now - timedelta(minutes=5, seconds=10)) == 50  # "5m ago" becomes "6m ago"
    assert wait(now + timedelta(minutes=2, seconds=5.5)) == 5.5  # "in 2m" becomes "in 1m"
    assert wait(now + timedelta(seconds=62)) == 2  # "in 1m" becomes "in 59s", then every second
    assert wait(now + timedelta(hours=1, seconds=20)) == 20  # "in 1h 00m" becomes "in 59m"
    assert wait(now + timedelta(hours=3, minutes=4, seconds=20)) == 20  # "in 3h 04m" becomes "in 3h 03m"
