"""Pictures of a table's refreshes (issue 39): the one chart (duration by strategy, rows written, staleness against
the target) in ``%mt history --plot`` and on the card, and the dashboard's tables by refresh time an hour."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta

from widget_helpers import NAME, T0, continuous

from mt_magic.runtime.inspect.cost_history import observed_per_hour
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.status import RefreshOutcome, RefreshRecord, TableStatus
from mt_magic.testing import FakeBackend, FakeClock, ManualExecutor
from mt_magic.vocabulary import JobState, RefreshKind, RefreshMode, RefreshTrigger
from mt_magic.widgets.dashboard import cost_html, cost_text, costs
from mt_magic.widgets.history_chart import STRATEGY_COLOURS, HistoryChartView, history_svg
from mt_magic.widgets.live import LiveViews

SVG = "{http://www.w3.org/2000/svg}"
MERGE = Strategy.AGGREGATE_MERGE.label


def record(minute: int, seconds: float, rows: int, strategy: str = "", staleness: float | None = None) -> RefreshRecord:
    kind = RefreshKind.INCREMENTAL if strategy.startswith("incremental") else RefreshKind.FULL
    return RefreshRecord(
        kind,
        RefreshTrigger.SCHEDULED,
        T0 + timedelta(minutes=minute),
        timedelta(seconds=seconds),
        rows,
        minute,
        staleness_before=None if staleness is None else timedelta(seconds=staleness),
        strategy=strategy or "full recompute",
    )


RECORDS = (
    record(3, 1, 40, f"incremental: {MERGE} · delta of 1 source", 50),
    record(2, 2, 10, f"incremental: {MERGE}", 130),
    record(1, 8, 1000, "", None),
)


def test_the_chart_shows_duration_by_strategy_rows_written_and_staleness_against_the_target() -> None:
    svg = history_svg(RECORDS, timedelta(minutes=1))
    root = ET.fromstring(svg)
    bars = root.findall(f"{SVG}rect[@class='mt-duration']")
    assert [b.get("data-strategy") for b in bars] == [MERGE, MERGE, "full recompute"]
    assert [b.get("fill") for b in bars] == [STRATEGY_COLOURS[MERGE]] * 2 + [STRATEGY_COLOURS["full recompute"]]
    rows = root.findall(f"{SVG}g[@class='mt-rows']/{SVG}rect")
    assert [round(float(r.get("height")), 1) for r in rows] == [1.6, 0.4, 40.0]  # type: ignore[arg-type]
    assert "rows written (most 1,000)" in svg and "target 1m 00s" in svg
    assert f"■ {MERGE}" in svg and "■ full recompute" in svg
    assert len(root.findall(f"{SVG}g[@class='mt-staleness']")) == 2


def test_history_plot_is_the_chart_alone_with_the_same_facts_in_text() -> None:
    view = HistoryChartView(NAME, RECORDS, timedelta(minutes=1))
    page = view._repr_html_()
    assert page.count("<svg") == 1 and "<table" not in page
    assert repr(view).splitlines() == [
        f"{NAME}: 3 recent refresh(es)",
        "full recompute: 1 refresh(es), median 8s, 1,000 rows written",
        f"{MERGE}: 2 refresh(es), median 1.5s (1s–2s), 50 rows written",
        "staleness when they started: 1 of 2 within the 1m 00s target, worst 2m 10s",
    ]
    assert "no refresh committed yet" in repr(HistoryChartView(NAME, ()))


def _status(name: str, every: timedelta, *records: RefreshRecord) -> TableStatus:
    return TableStatus(name, RefreshMode.CONTINUOUS, every, JobState.SCHEDULED, recent=records)


def test_the_dashboard_ranks_tables_by_refresh_time_an_hour_and_highlights_the_costliest() -> None:
    now = T0 + timedelta(minutes=10)
    cheap = _status("mt.default.cheap", timedelta(minutes=1), record(9, 1, 1), record(8, 1, 1))
    dear = _status("mt.default.dear", timedelta(minutes=5), record(5, 60, 1))
    idle = _status("mt.default.idle", timedelta(minutes=1))
    # cheap: 2 s over 2 minutes (its first record 2 minutes ago) → 60 s an hour; dear: 60 s over 5 minutes → 720 s
    assert observed_per_hour(cheap.recent, cheap.freshness, now) == timedelta(seconds=60)
    assert observed_per_hour(dear.recent, dear.freshness, now) == timedelta(seconds=720)
    assert observed_per_hour((), timedelta(minutes=1), now) is None
    # a table refreshed once, just now, is priced at one refresh per interval, not per second since
    assert observed_per_hour((record(10, 3, 1),), timedelta(minutes=1), now) == timedelta(seconds=180)
    assert [s.name for s, _ in costs([cheap, idle, dear], now)] == ["mt.default.dear", "mt.default.cheap"]
    page = cost_html([cheap, idle, dear], now)
    flags = re.findall(r'data-table="([^"]+)" data-costly="(\w+)"', page)
    assert flags == [("mt.default.dear", "true"), ("mt.default.cheap", "false")]
    assert "12m 00s an hour (20.0%)" in page
    assert cost_text([cheap, dear], now).splitlines()[1] == "mt.default.dear: 12m 00s an hour"
    assert cost_html([idle], now) == ""


def test_the_card_and_the_dashboard_draw_the_managers_recent_refreshes(
    live: LiveViews, manager: RefreshManager, backend: FakeBackend, executor: ManualExecutor, clock: FakeClock
) -> None:
    card, dashboard = live.card(NAME), live.dashboard()
    charted = card.chart.value
    backend.script(NAME, RefreshOutcome(RefreshKind.INCREMENTAL, 5, 42, None, f"incremental: {MERGE}"))
    clock.advance(seconds=1)
    card.refresh_button.click()
    manager.step()
    clock.advance(seconds=2)
    executor.run_all()
    manager.step()
    assert card.chart.value != charted and f'data-strategy="{MERGE}"' in card.chart.value
    assert 'class="mt-card-chart"' in card.fallback_html()
    live.tick()
    assert f'data-table="{NAME}" data-costly="true"' in dashboard.cost.value
    assert "refresh time an hour, costliest first:" in repr(dashboard)
    second = continuous("mt.default.second", timedelta(seconds=30))
    backend.put(second)
    manager.add(second, initial=False)
    manager.step()
    assert "mt.default.second" not in dashboard.cost.value  # no refresh yet: no cost to show
