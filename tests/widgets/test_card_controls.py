"""The card's buttons reach the manager; closing or re-rendering a card leaves no observer or thread behind."""

from __future__ import annotations

import time

import ipywidgets as widgets
from widget_helpers import NAME, ManagerActions, subscribers

from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.results import StatementResult
from mt_magic.sql.ddl.statements import Freshness, FreshnessUnit
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState, RefreshTrigger
from mt_magic.widgets.live import THREAD_NAME, LiveViews


def test_refresh_now_runs_a_manual_refresh(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, executor: ManualExecutor
) -> None:
    card = live.card(NAME)
    card.refresh_button.click()
    assert "✔ Refreshing mt.default.orders_per_day." in card.message.value
    [request] = manager.step()
    assert request.trigger is RefreshTrigger.MANUAL and 'data-state="running"' in card.title.value
    executor.run_all()
    manager.step()
    assert card.status.last_refresh is not None and card.status.last_refresh.trigger is RefreshTrigger.MANUAL


def test_suspend_and_resume_toggle(live: LiveViews, manager: RefreshManager, actions: ManagerActions) -> None:
    card = live.card(NAME)
    assert card.suspend_button.description == "Suspend"
    card.suspend_button.click()
    assert manager.status(NAME).state is JobState.SUSPENDED
    assert card.suspend_button.description == "Resume" and 'data-state="suspended"' in card.title.value
    card.suspend_button.click()
    assert manager.status(NAME).state is JobState.SCHEDULED and card.suspend_button.description == "Suspend"
    assert [c[0] for c in actions.calls if c[0] != "preview"] == ["suspend", "resume"]


def test_set_freshness_passes_the_typed_interval(
    live: LiveViews, manager: RefreshManager, actions: ManagerActions
) -> None:
    card = live.card(NAME)
    assert (card.freshness_value.value, card.freshness_unit.value) == (1, "MINUTE")
    card.freshness_value.value, card.freshness_unit.value = 10, "SECOND"
    card.freshness_button.click()
    assert ("set_freshness", NAME, Freshness(10, FreshnessUnit.SECOND)) in actions.calls
    manager.step()
    assert "target 10s" in card.details.value


def test_backfill_parses_the_partition_and_cascades(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, actions: ManagerActions
) -> None:
    card = live.card(NAME)
    card.partition.value, card.cascade.value = "ds = '20250101'", True
    card.backfill_button.click()
    assert ("refresh", NAME, (("ds", "20250101"),), True) in actions.calls
    [request] = manager.step()
    assert request.partition == (("ds", "20250101"),)

    card.partition.value = "ds = "
    card.backfill_button.click()
    assert "✖ PARTITION (ds =): expected a literal value for partition column ds" in card.message.value


def test_closing_a_card_unsubscribes_it(
    live: LiveViews, manager: RefreshManager, clock: FakeClock, executor: ManualExecutor
) -> None:
    card = live.card(NAME)
    assert subscribers(manager) == 1 and live.views == (card,)
    card.close()
    assert subscribers(manager) == 0 and live.views == () and card.closed
    assert card.comm is None and all(child.comm is None for child in card.children)
    before = card.details.value
    clock.advance(minutes=1)
    manager.step()
    executor.run_all()
    manager.step()
    live.tick()
    assert card.details.value == before


def test_a_new_card_replaces_the_previous_one(
    live: LiveViews, manager: RefreshManager, actions: ManagerActions
) -> None:
    first = live.statement_output([StatementResult("created", (NAME,), f"Created {NAME}.")])
    [old_card] = first.cards
    new_card = live.card(NAME)
    assert old_card.closed and not new_card.closed and subscribers(manager) == 1
    assert first.children == (first.messages,) and "Created" in repr(first)
    dashboard = live.dashboard()
    live.dashboard()
    assert dashboard.closed and subscribers(manager) == 2 and len(live.views) == 2
    live.close()
    assert subscribers(manager) == 0 and live.views == ()


def test_the_updater_thread_runs_only_while_a_view_is_open(
    manager: RefreshManager, actions: ManagerActions, clock: FakeClock
) -> None:
    live = LiveViews(manager, actions, clock=clock, tick_every=0.02)
    try:
        card = live.card(NAME)
        assert live.running
        deadline = time.monotonic() + 5
        while card.preview is None and time.monotonic() < deadline:  # loaded by the updater thread
            time.sleep(0.01)
        assert card.preview is not None and ("preview", NAME, 100) in actions.calls
        card.close()
        deadline = time.monotonic() + 5
        while live.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not live.running
        live.card(NAME)
        assert live.running
    finally:
        live.close()
    assert not live.running and not any(t.name == THREAD_NAME for t in __import__("threading").enumerate())
    assert subscribers(manager) == 0


def test_widgets_in_a_closed_card_are_all_closed(live: LiveViews) -> None:
    before = len(widgets.Widget.widgets)
    card = live.card(NAME)
    assert len(widgets.Widget.widgets) > before
    card.close()
    assert len(widgets.Widget.widgets) == before
