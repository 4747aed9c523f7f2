"""The static pictures: the history chart, the lineage graph, badges; pure functions of records."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import timedelta

import pytest
from widget_helpers import T0

from mt_magic.runtime.graph import Lineage
from mt_magic.runtime.status import RefreshRecord, TableStatus
from mt_magic.runtime.workspace import human_duration
from mt_magic.vocabulary import JobState, RefreshEngine, RefreshKind, RefreshMode, RefreshTrigger
from mt_magic.widgets.badges import FreshnessLevel, freshness_level
from mt_magic.widgets.history_chart import history_svg
from mt_magic.widgets.lineage import layout, lineage_svg
from mt_magic.widgets.render import card_text
from mt_magic.widgets.static_views import HistoryView, LineageView

SVG = "{http://www.w3.org/2000/svg}"


def record(minute: int, seconds: float, staleness: float | None, kind: RefreshKind = RefreshKind.FULL) -> RefreshRecord:
    return RefreshRecord(
        kind,
        RefreshTrigger.SCHEDULED,
        T0 + timedelta(minutes=minute),
        timedelta(seconds=seconds),
        10,
        minute,
        staleness_before=None if staleness is None else timedelta(seconds=staleness),
    )


def status(name: str, staleness: float | None, freshness: float = 60) -> TableStatus:
    return TableStatus(
        name,
        RefreshMode.CONTINUOUS,
        timedelta(seconds=freshness),
        JobState.SCHEDULED,
        staleness=None if staleness is None else timedelta(seconds=staleness),
    )


@pytest.mark.parametrize(
    ("staleness", "level"),
    [
        (None, FreshnessLevel.UNKNOWN),
        (0, FreshnessLevel.FRESH),
        (60, FreshnessLevel.FRESH),
        (61, FreshnessLevel.LATE),
        (120, FreshnessLevel.LATE),
        (121, FreshnessLevel.STALE),
    ],
)
def test_freshness_levels(staleness: float | None, level: FreshnessLevel) -> None:
    delta = None if staleness is None else timedelta(seconds=staleness)
    assert freshness_level(delta, timedelta(minutes=1)) is level


def test_human_durations() -> None:
    assert [human_duration(timedelta(seconds=s)) for s in (0, 1.25, 42, 125, 7300, 200000)] == [
        "0s",
        "1.2s",
        "42s",
        "2m 05s",
        "2h 01m",
        "2d 7h",
    ]
    assert human_duration(None) == "—"


def test_the_history_chart_scales_durations_and_colours_staleness_against_the_target() -> None:
    records = [record(3, 4, 150, RefreshKind.INCREMENTAL), record(2, 2, 30), record(1, 1, None)]
    svg = history_svg(records, timedelta(minutes=1))
    root = ET.fromstring(svg)
    bars = root.findall(f"{SVG}rect")
    heights = sorted(float(b.get("height")) for b in bars)  # type: ignore[arg-type]
    assert len(bars) == 3 and heights[-1] == pytest.approx(80) and heights[0] == pytest.approx(20)
    stems = root.findall(f"{SVG}g[@class='mt-staleness']/{SVG}circle")
    assert [c.get("fill") for c in stems] == [FreshnessLevel.STALE.colour, FreshnessLevel.FRESH.colour]
    assert "target 1m 00s" in svg and "■ incremental" in svg and "■ full" in svg


def test_the_history_view_has_the_chart_and_the_table() -> None:
    view = HistoryView("mt.default.t", (record(2, 2, 30), record(1, 1, None)), timedelta(minutes=1))
    page = view._repr_html_()
    assert page.count("<svg") == 1 and page.count("<tr>") == 3 and "freshness target 1m 00s" in page
    assert "30s" in repr(view).splitlines()[2] and "no refresh committed yet" in HistoryView("x", ())._repr_html_()
    assert "not recorded yet" in history_svg([record(1, 1, None)], timedelta(minutes=1))


def test_the_text_forms_say_which_strategy_and_engine_ran() -> None:
    merged = replace(
        record(2, 0.1, 0, RefreshKind.INCREMENTAL),
        strategy="incremental: merge the aggregated delta",
        engine=RefreshEngine.IN_PROCESS,
    )
    failed = replace(record(1, 1, None), snapshot_id=None, error="AnalysisException: no such column")
    lines = repr(HistoryView("mt.default.t", (merged, failed))).splitlines()
    assert lines[1].endswith("strategy | engine")
    assert lines[2].endswith("incremental: merge the aggregated delta | in process (DuckDB)")
    assert lines[3].endswith("failed: AnalysisException: no such column | —")
    text = card_text(replace(status("mt.default.t", 0), last_refresh=merged), None, T0)
    assert "  ran: incremental: merge the aggregated delta · in process (DuckDB)" in text.splitlines()
    recomputed = replace(record(3, 1, 0), strategy="full: fallback — a window …", engine=RefreshEngine.SPARK)
    assert "  ran: full: fallback — a window … · Spark" in card_text(
        replace(status("t", 0), last_refresh=recomputed), None
    )


GRAPH = Lineage(
    {
        "mt.db.dwd": ("mt.db.ods_log", "mt.db.ods_product"),
        "mt.db.dws": ("mt.db.dwd",),
        "mt.db.other": ("mt.db.ods_other",),
    }
)


def test_lineage_layout_puts_sources_left_and_readers_right() -> None:
    placed = layout(GRAPH)
    assert {n: p.column for n, p in placed.items()} == {
        "mt.db.ods_log": 0,
        "mt.db.ods_product": 0,
        "mt.db.ods_other": 0,
        "mt.db.dwd": 1,
        "mt.db.other": 1,
        "mt.db.dws": 2,
    }
    assert placed["mt.db.dwd"].row == 0 and placed["mt.db.other"].row == 1


def test_lineage_svg_colours_each_materialized_node_by_its_freshness() -> None:
    statuses = {"mt.db.dwd": status("mt.db.dwd", 10), "mt.db.dws": status("mt.db.dws", 500)}
    svg = lineage_svg(GRAPH, statuses, focus="mt.db.dws")
    root = ET.fromstring(svg)
    levels = {g.get("data-table"): g.get("data-level") for g in root.iter(f"{SVG}g")}
    assert levels == {
        "mt.db.dwd": "fresh",
        "mt.db.dws": "stale",
        "mt.db.other": "unknown",
        "mt.db.ods_log": "source",
        "mt.db.ods_product": "source",
        "mt.db.ods_other": "source",
    }
    assert len(root.findall(f"{SVG}path[@class='mt-edge']")) == 4
    assert re.search(r'data-table="mt.db.dws".*?stroke-width="3"', svg)


def test_lineage_around_a_table_keeps_its_ancestors_and_descendants() -> None:
    around = GRAPH.around("mt.db.dwd")
    assert set(around.nodes) == {"mt.db.ods_log", "mt.db.ods_product", "mt.db.dwd", "mt.db.dws"}
    view = LineageView(around, {"mt.db.dws": status("mt.db.dws", 0)}, "mt.db.dwd")
    assert "mt.db.dws [fresh · up to date / target 1m 00s] ← mt.db.dwd" in repr(view)
    assert "plain Iceberg sources: mt.db.ods_log, mt.db.ods_product" in repr(view)
    with pytest.raises(KeyError):
        GRAPH.around("mt.db.nope")


def test_the_lineage_around_a_table_answers_its_upstream_as_its_status_does() -> None:
    """One upstream answer (issue 38): ``table(t).lineage.upstream`` was the whole neighbourhood's mapping while
    ``TableStatus.upstream`` was t's sources."""
    around = GRAPH.around("mt.db.dwd")
    assert around.focus == "mt.db.dwd"
    assert around.upstream == ("mt.db.ods_log", "mt.db.ods_product")  # the definition's order, as TableStatus
    assert around.downstream == ("mt.db.dws",)
    assert GRAPH.around("mt.db.ods_log").upstream == () and GRAPH.around("mt.db.ods_log").downstream == ("mt.db.dwd",)
    assert around.reads == {"mt.db.dwd": ("mt.db.ods_log", "mt.db.ods_product"), "mt.db.dws": ("mt.db.dwd",)}
    with pytest.raises(ValueError, match="table\\(name\\).lineage"):
        GRAPH.upstream  # noqa: B018 - the whole graph has no single upstream
