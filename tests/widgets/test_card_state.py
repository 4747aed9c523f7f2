"""A live card's state after the manager's events and ticks, without a browser (fake backend and clock)."""

from __future__ import annotations

import gc
import re
import sys
from datetime import timedelta

import pytest
from widget_helpers import NAME, T0, ManagerActions

from mt_magic.errors import NoSuchMaterializedTableError
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.spark.preview import Preview
from mt_magic.runtime.status import JobProgress
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState
from mt_magic.widgets.badges import FreshnessLevel
from mt_magic.widgets.live import LiveViews


def level(card) -> str:  # type: ignore[no-untyped-def]
    """The freshness badge's level as the browser sees it (the data-level attribute in the title HTML)."""
    match = re.search(r'class="mt-badge mt-freshness" data-level="(\w+)" style="background:(#\w+)', card.title.value)
    assert match, card.title.value
    return match.group(1)


def test_the_badge_colour_follows_the_measured_staleness(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, clock: FakeClock
) -> None:
    card = live.card(NAME)
    assert level(card) == "fresh" and "up to date" in card.title.value and "#16a34a" in card.title.value

    backend.pending[NAME] = clock()  # a source commit the table does not reflect yet
    clock.advance(seconds=45)
    manager.step()  # the staleness poll reads pending_since; no event says so: the tick shows it
    live.tick()
    assert level(card) == "fresh" and "45s behind / target 1m 00s" in card.title.value

    clock.advance(seconds=30)
    live.tick()
    assert level(card) == FreshnessLevel.LATE.value and FreshnessLevel.LATE.colour in card.title.value
    assert "measured staleness 1m 15s" in card.details.value

    clock.advance(minutes=2)
    live.tick()
    assert level(card) == "stale" and FreshnessLevel.STALE.colour in card.title.value


def test_state_progress_and_last_refresh_follow_the_events(
    live: LiveViews,
    manager: RefreshManager,
    backend: FakeBackend,
    clock: FakeClock,
    executor: ManualExecutor,
    actions: ManagerActions,
) -> None:
    card = live.card(NAME)
    live.run_pending()
    assert "2024-12-31" in card.preview_area.value and "newest day first" in card.preview_area.value
    assert card.progress.layout.display == "none" and card.status.state is JobState.SCHEDULED
    assert "never" in card.details.value and "CONTINUOUS · incremental (aggregate merge)" in card.title.value

    clock.advance(minutes=1)
    [request] = manager.step()  # REFRESH_STARTED, delivered on this (the manager's) thread
    assert 'data-state="running"' in card.title.value and "running · starting" in card.details.value
    assert card.progress.layout.display == "flex" and card.progress.value == 0.0

    backend.progress_by_group[request.job_group] = JobProgress(3, 4)
    clock.advance(seconds=1)
    manager.step()  # REFRESH_PROGRESS
    assert card.progress.value == 0.75 and "3/4 tasks" in card.details.value

    clock.advance(seconds=2)
    executor.run_all()
    manager.step()  # REFRESH_SUCCEEDED
    assert card.status.state is JobState.SCHEDULED and card.progress.layout.display == "none"
    assert "full · scheduled · 3s · 10 rows · 2025-01-01 10:01:00 UTC (3s ago)" in card.details.value
    assert "next refresh" in card.details.value and "10:02:00" in card.details.value

    snapshot = card.status.last_refresh.snapshot_id  # type: ignore[union-attr]
    actions.previews[NAME] = Preview(NAME, ("day", "orders"), (("2025-01-02", 1),), snapshot, 100)
    assert card.preview_area.value.count("<tr>") == 3  # the old rows until the updater thread loads the new ones
    live.run_pending()
    assert f"snapshot {snapshot}" in card.preview_area.value and "2025-01-02" in card.preview_area.value


def test_a_failure_shows_on_the_card(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, clock: FakeClock, executor: ManualExecutor
) -> None:
    card = live.card(NAME)
    backend.script(NAME, RuntimeError("executor lost"))
    clock.advance(minutes=1)
    manager.step()
    executor.run_all()
    manager.step()
    assert card.status.state is JobState.RETRYING
    assert "RuntimeError: executor lost" in card.details.value and 'data-state="retrying"' in card.title.value


def test_a_dropped_table_disables_the_card(live: LiveViews, manager: RefreshManager) -> None:
    card = live.card(NAME)
    manager.remove(NAME)
    manager.step()
    assert "dropped" in card.details.value and card.refresh_button.disabled and card.backfill_button.disabled


def test_the_fallbacks_are_readable_html_and_text(live: LiveViews) -> None:
    card = live.card(NAME)
    live.run_pending()
    bundle = card._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == card.model_id
    text = bundle["text/plain"]
    assert text.startswith(f"{NAME} — CONTINUOUS · incremental (aggregate merge)")
    assert "[fresh · up to date / target 1m 00s]" in text and "2024-12-31 | 5" in text
    assert 'class="mt-card-static"' in bundle["text/html"] and 'data-level="fresh"' in bundle["text/html"]
    assert repr(card) == text


def test_the_dashboard_shows_every_table_with_the_same_badges(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, clock: FakeClock
) -> None:
    from widget_helpers import continuous

    dashboard = live.dashboard()
    assert dashboard.table.value.count('class="mt-row"') == 1
    second = continuous("mt.default.second", timedelta(seconds=30))
    backend.put(second)
    manager.add(second, initial=False)
    manager.step()  # TABLE_ADDED
    assert dashboard.table.value.count('class="mt-row"') == 2
    backend.pending[NAME] = T0
    clock.advance(minutes=5)
    manager.step()
    live.tick()
    row = re.search(rf'data-table="{NAME}">(.*?)</tr>', dashboard.table.value).group(1)  # type: ignore[union-attr]
    assert 'data-level="stale"' in row
    assert "mt.default.second" in repr(dashboard) and "text/html" in dashboard._repr_mimebundle_()


def test_a_card_for_an_unknown_table_fails_cleanly_and_leaves_nothing_to_clean_up(live: LiveViews) -> None:
    """Regression: the half-built card's ``__del__`` raised AttributeError (no ``lock``) at collection/exit."""
    unraisable: list[object] = []
    previous, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        with pytest.raises(NoSuchMaterializedTableError, match="mt.db.nope"):
            live.card("mt.db.nope")
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert unraisable == []


def test_a_table_that_keeps_failing_shows_it_suspended_itself_and_how_to_resume(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, clock: FakeClock, executor: ManualExecutor
) -> None:
    card = live.card(NAME)
    backend.script(NAME, *[RuntimeError(f"disk full {n}") for n in range(5)])
    clock.advance(minutes=1)
    for _ in range(5):
        manager.step()
        executor.run_all()
        manager.step()
        clock.advance(minutes=15)  # past any backoff
    assert card.status.state is JobState.FAILED and card.status.consecutive_failures == 5
    assert 'data-state="failed"' in card.title.value
    assert "RuntimeError: disk full 4 (5 in a row)" in card.details.value
    assert "ALTER MATERIALIZED TABLE … RESUME" in card.details.value
    assert manager.step() == []  # nothing retries by itself

    manager.resume(NAME)
    manager.step()
    executor.run_all()
    manager.step()
    assert card.status.state is JobState.SCHEDULED and "RESUME" not in card.details.value
