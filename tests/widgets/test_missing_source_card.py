"""A source gone under a table, as the card and the dashboard show it (fake backend and clock; the real catalog
and Spark: tests/integration/test_missing_source.py)."""

from __future__ import annotations

from datetime import datetime

import pytest
from widget_helpers import NAME

from mt_magic.errors import NoSuchSourceTableError
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.testing import FakeBackend, FakeClock
from mt_magic.widgets.live import LiveViews
from mt_magic.widgets.render import dashboard_text

SOURCE = "mt.default.orders"


def test_the_card_says_source_missing_with_the_fix_not_fresh_and_recovers(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    card = live.card(NAME)
    assert 'data-level="fresh"' in card.title.value

    def gone(table: str) -> datetime | None:
        raise NoSuchSourceTableError(table, SOURCE)

    monkeypatch.setattr(backend, "pending_since", gone)
    clock.advance(seconds=30)
    manager.step()
    live.tick()
    error = str(NoSuchSourceTableError(NAME, SOURCE))
    assert 'data-level="source missing"' in card.title.value and f"source missing · {SOURCE}" in card.title.value
    assert "Fix: re-create mt.default.orders" in card.details.value and "up to date" not in card.title.value
    lines = card.fallback_text().splitlines()
    assert lines[1] == f"  [source missing · {SOURCE}]" and f"  source missing: {error}" in lines
    assert "  freshness: target 1m 00s · measured staleness —" in lines
    row = dashboard_text(manager.statuses()).split(" | ")
    assert f"source missing · {SOURCE}" in row and row[-1] == error

    monkeypatch.undo()  # the source is back
    clock.advance(seconds=30)
    manager.step()
    live.tick()
    assert 'data-level="fresh"' in card.title.value and "source missing" not in card.details.value
