"""A live query's re-runs on the real RefreshManager (fake backend, clock and executor), without Spark: which
commits start a re-run, the debounce, no second run while one is in flight, errors, pause, and the catalog poll.
The updater thread is not started: ``live.tick()`` and ``live.run_pending()`` stand for it, so nothing is timed.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from widget_helpers import NAME, T0, continuous

from mt_magic.runtime.inspect.query import QueryResult, SourceSnapshot
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import RefreshKind
from mt_magic.widgets.live import LiveViews
from mt_magic.widgets.live_query import LiveQuery, RerunSchedule

OTHER = "mt.default.other_table"
PLAIN = "mt.default.plain_source"


class FakeRunner:
    """Answers each run with the snapshots it is told are current; counts runs; can fail once."""

    def __init__(self, clock: FakeClock, tables: tuple[str, ...] = (NAME,)) -> None:
        self.clock, self.tables = clock, tables
        self.snapshots: dict[str, int | None] = dict.fromkeys(tables, 0)
        self.runs = 0
        self.fail: Exception | None = None

    def run(self) -> QueryResult:
        self.runs += 1
        if self.fail is not None:
            error, self.fail = self.fail, None
            raise error
        as_of = tuple(SourceSnapshot(t, s, self.clock(), t != PLAIN) for t, s in self.snapshots.items())
        rows = tuple((t, s) for t, s in self.snapshots.items())
        return QueryResult(("table", "snapshot"), rows, as_of, False, 100, self.clock(), self.clock())

    def current_snapshots(self) -> dict[str, int | None]:
        return dict(self.snapshots)


def commit(manager: RefreshManager, executor: ManualExecutor, runner: FakeRunner, name: str = NAME) -> None:
    """A refresh of ``name`` through the manager: REFRESH_SUCCEEDED reaches the views on this thread."""
    manager.refresh_now(name)
    manager.step()
    executor.run_all()
    manager.step()
    runner.snapshots[name] = manager.status(name).last_refresh.snapshot_id  # type: ignore[union-attr]


@pytest.fixture
def runner(clock: FakeClock) -> FakeRunner:
    return FakeRunner(clock)


@pytest.fixture
def view(live: LiveViews, runner: FakeRunner) -> LiveQuery:
    """Events only (no catalog poll): every task the updater runs is a re-run."""
    return live.query(runner, runner.run(), quiet=timedelta(seconds=2), longest=timedelta(seconds=10), poll_every=None)


# -- the schedule alone -----------------------------------------------------------------------------------


def test_commits_within_the_quiet_window_make_one_run_at_most_longest_after_the_first() -> None:
    schedule = RerunSchedule(quiet=timedelta(seconds=2), longest=timedelta(seconds=10))
    assert not schedule.start(T0)  # nothing changed
    for second in range(0, 9, 1):  # a commit every second: never quiet for 2 s
        schedule.changed(T0 + timedelta(seconds=second))
        assert not schedule.start(T0 + timedelta(seconds=second, milliseconds=500))
    assert schedule.start(T0 + timedelta(seconds=10))  # the cap: 10 s after the first commit
    assert not schedule.start(T0 + timedelta(seconds=30))  # its commits were taken by that run

    schedule.finished()
    schedule.changed(T0 + timedelta(seconds=40))
    assert not schedule.start(T0 + timedelta(seconds=41)) and schedule.start(T0 + timedelta(seconds=42))


def test_a_commit_during_a_run_makes_exactly_one_more_run_after_it() -> None:
    schedule = RerunSchedule(quiet=timedelta(seconds=2))
    schedule.changed(T0)
    assert schedule.start(T0 + timedelta(seconds=2))
    schedule.changed(T0 + timedelta(seconds=3))
    schedule.changed(T0 + timedelta(seconds=4))
    assert not schedule.start(T0 + timedelta(seconds=60))  # in flight: never a second one
    schedule.finished()
    assert schedule.start(T0 + timedelta(seconds=60)) and not schedule.start(T0 + timedelta(seconds=61))


def test_paused_notes_commits_and_runs_once_resumed() -> None:
    schedule = RerunSchedule(quiet=timedelta(seconds=2), paused=True)
    schedule.changed(T0)
    assert not schedule.start(T0 + timedelta(minutes=5)) and schedule.waiting
    schedule.paused = False
    assert schedule.start(T0 + timedelta(minutes=5))


# -- the view on the manager's events ---------------------------------------------------------------------


def test_a_refresh_of_a_table_it_reads_re_runs_it_once_after_the_quiet_window(
    live: LiveViews,
    view: LiveQuery,
    runner: FakeRunner,
    manager: RefreshManager,
    executor: ManualExecutor,
    clock: FakeClock,
) -> None:
    assert runner.runs == 1 and view.rows == ((NAME, 0),)
    assert f'data-table="{NAME}" data-snapshot="0"' in view.header.value and "run 1" in view.header.value

    for _ in range(3):  # three commits within a second of each other
        commit(manager, executor, runner)
        clock.advance(seconds=0.5)
        live.tick()
        assert live.run_pending() == 0
    assert "a commit arrived: re-run due" in view.header.value

    clock.advance(seconds=2)
    live.tick()
    assert live.run_pending() == 1 and runner.runs == 2  # one re-run for the three commits
    newest = runner.snapshots[NAME]
    assert view.rows == ((NAME, newest),) and view.runs == 2
    assert f'data-snapshot="{newest}"' in view.header.value and "run 2" in view.header.value
    assert "up to date" not in view.header.value and "behind / target 1m 00s" in view.header.value

    clock.advance(minutes=5)
    live.tick()
    assert live.run_pending() == 0 and runner.runs == 2  # nothing new: no run


def test_no_second_run_while_one_is_in_flight(
    live: LiveViews,
    view: LiveQuery,
    runner: FakeRunner,
    manager: RefreshManager,
    executor: ManualExecutor,
    clock: FakeClock,
) -> None:
    commit(manager, executor, runner)
    clock.advance(seconds=3)
    live.tick()  # the re-run is queued on the updater thread, not run yet
    assert 'data-state="running"' in view.header.value
    commit(manager, executor, runner)  # commits while it is in flight
    commit(manager, executor, runner)
    for _ in range(3):
        clock.advance(seconds=5)
        live.tick()
    assert live.run_pending() == 1 and runner.runs == 2  # the queue held one run, not four

    clock.advance(seconds=3)
    live.tick()
    assert live.run_pending() == 1 and runner.runs == 3  # one more for the commits during the run
    assert view.rows == ((NAME, runner.snapshots[NAME]),)


def test_other_tables_and_refreshes_that_commit_nothing_start_no_run(
    live: LiveViews,
    view: LiveQuery,
    runner: FakeRunner,
    manager: RefreshManager,
    backend: FakeBackend,
    executor: ManualExecutor,
    clock: FakeClock,
) -> None:
    backend.put(continuous(OTHER, last_refresh_at=T0))
    manager.upsert(backend.tables[OTHER])
    commit(manager, executor, runner, OTHER)
    backend.script(NAME, RefreshKind.NOOP)
    manager.refresh_now(NAME)
    manager.step()
    executor.run_all()
    manager.step()
    clock.advance(minutes=1)
    live.tick()
    assert live.run_pending() == 0 and runner.runs == 1


def test_a_failed_re_run_shows_its_error_keeps_the_rows_and_the_next_commit_recovers(
    live: LiveViews,
    view: LiveQuery,
    runner: FakeRunner,
    manager: RefreshManager,
    executor: ManualExecutor,
    clock: FakeClock,
) -> None:
    commit(manager, executor, runner)
    runner.fail = RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] boom\n  at line 2")
    clock.advance(seconds=3)
    live.tick()
    live.run_pending()
    assert view.rows == ((NAME, 0),) and view.runs == 1 and view.attempts == 2
    assert "last re-run failed: RuntimeError: [TABLE_OR_VIEW_NOT_FOUND] boom" in view.message.value
    assert not view.closed and view in live.views

    commit(manager, executor, runner)
    clock.advance(seconds=3)
    live.tick()
    assert live.run_pending() == 1 and view.runs == 2 and view.message.value == ""
    assert view.rows == ((NAME, runner.snapshots[NAME]),)


def test_pause_holds_re_runs_and_resume_runs_what_waited(
    live: LiveViews,
    view: LiveQuery,
    runner: FakeRunner,
    manager: RefreshManager,
    executor: ManualExecutor,
    clock: FakeClock,
) -> None:
    view.pause_button.value = True  # the button, as a click sets it
    assert view.pause_button.description == "Resume"
    commit(manager, executor, runner)
    clock.advance(minutes=1)
    live.tick()
    assert live.run_pending() == 0 and "paused: a commit is waiting" in view.header.value

    view.resume()
    assert view.pause_button.description == "Pause"
    live.tick()
    assert live.run_pending() == 1 and runner.runs == 2


def test_re_run_now_runs_without_a_commit(live: LiveViews, view: LiveQuery, runner: FakeRunner) -> None:
    view.rerun_button.click()
    live.tick()
    assert live.run_pending() == 1 and runner.runs == 2


def test_a_plain_source_commit_is_found_by_the_catalog_poll(live: LiveViews, clock: FakeClock) -> None:
    runner = FakeRunner(clock, (PLAIN,))
    view = live.query(runner, runner.run(), quiet=timedelta(seconds=2), poll_every=timedelta(seconds=10))
    assert "source table" in view.header.value
    clock.advance(seconds=5)
    live.tick()
    assert live.run_pending() == 0  # not time to poll yet

    runner.snapshots[PLAIN] = 99  # another engine appended to the source
    clock.advance(seconds=5)
    live.tick()
    assert live.run_pending() == 1 and runner.runs == 1  # the poll ran and noted the change
    clock.advance(seconds=2)
    live.tick()
    assert live.run_pending() == 1 and runner.runs == 2 and view.rows == ((PLAIN, 99),)


def test_closing_unsubscribes_and_a_queued_run_does_nothing(
    live: LiveViews,
    view: LiveQuery,
    runner: FakeRunner,
    manager: RefreshManager,
    executor: ManualExecutor,
    clock: FakeClock,
) -> None:
    from widget_helpers import subscribers

    before = subscribers(manager)
    commit(manager, executor, runner)
    clock.advance(seconds=3)
    live.tick()
    view.close()
    assert live.run_pending() == 0 and runner.runs == 1
    assert subscribers(manager) == before - 1 and view not in live.views
    assert not view.wait_for_run(after=view.attempts, timeout=60)  # returns at once: the view is closed


def test_the_fallbacks_say_what_the_rows_are_as_of(view: LiveQuery) -> None:
    text = repr(view)
    assert text.startswith("live query — last run 2025-01-01 10:00:00 UTC") and f"as of {NAME} @ 0" in text
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "mt-live-query-static" in bundle["text/html"]
    assert view.to_pandas().attrs["as_of"] == {NAME: 0}


def test_a_table_the_manager_does_not_know_shows_no_staleness(live: LiveViews, clock: FakeClock) -> None:
    """A table the manager does not know (another kernel's, a plain one) shows no staleness and raises nothing."""
    runner = FakeRunner(clock, ("mt.default.elsewhere",))
    view = live.query(runner, runner.run())
    assert "staleness unknown" in view.header.value


def test_a_due_re_run_waits_while_the_manager_pauses_for_an_unreachable_catalog(
    live: LiveViews,
    view: LiveQuery,
    runner: FakeRunner,
    manager: RefreshManager,
    backend: FakeBackend,
    clock: FakeClock,
) -> None:
    view.rerun_now()
    backend.unavailable = "connection refused"
    clock.advance(minutes=1)
    manager.step()  # discovery fails: every status carries the pause
    assert manager.status(NAME).paused
    live.tick()
    assert live.run_pending() == 0 and runner.runs == 1

    backend.unavailable = None
    clock.advance(minutes=5)
    manager.step()
    assert not manager.status(NAME).paused
    live.tick()
    assert live.run_pending() == 1 and runner.runs == 2
