"""Reading with a staleness policy (Trino's WHEN STALE): fail, refresh, or read anyway — judged from the
catalog with the workspace's injected clock, on a real Spark session and REST catalog."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from mt_magic.runtime.inspect.read import StaleReadWarning, StaleTableError, judge, read
from mt_magic.runtime.refresh.engine import Engine
from mt_magic.runtime.service import MaterializedTables
from mt_magic.runtime.workspace import utc_now
from mt_magic.sql import parse_cell

pytestmark = pytest.mark.spark

LATER = timedelta(hours=2)


def _later(mt: MaterializedTables) -> MaterializedTables:
    """The same tables seen by a reader whose clock is two hours ahead (past the one-hour FRESHNESS)."""
    workspace = replace(mt.workspace, clock=lambda: utc_now() + LATER)
    return MaterializedTables.inline(Engine(workspace, mt.engine.jobs))


@pytest.fixture
def totals(mt: MaterializedTables) -> MaterializedTables:
    spark = mt.workspace.spark
    spark.sql("CREATE TABLE sales (id BIGINT, region STRING, amount BIGINT) USING iceberg")
    spark.sql("INSERT INTO sales VALUES (1, 'north', 10), (2, 'south', 5)")
    [create] = parse_cell("""CREATE MATERIALIZED TABLE region_totals FRESHNESS = INTERVAL '1' HOUR
        AS SELECT region, sum(amount) AS total FROM sales GROUP BY region""")
    result = mt.execute(create)
    assert result.refresh is not None
    result.refresh.result(timeout=300)
    spark.sql("INSERT INTO sales VALUES (3, 'north', 7)")
    return mt


def _rows(df) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in df.collect())


def test_caught_up_table_reads_without_a_verdict(mt: MaterializedTables) -> None:
    spark = mt.workspace.spark
    spark.sql("CREATE TABLE quiet (id BIGINT) USING iceberg")
    spark.sql("INSERT INTO quiet VALUES (1), (2)")
    [create] = parse_cell("CREATE MATERIALIZED TABLE quiet_count AS SELECT count(*) AS n FROM quiet")
    mt.execute(create).refresh.result(timeout=300)  # type: ignore[union-attr]
    verdict = judge(_later(mt), "quiet_count", timedelta(0))
    assert verdict.pending_since is None and not verdict.stale
    assert _rows(read(_later(mt), "quiet_count", timedelta(0))) == [(2,)]


def test_within_max_staleness_reads_the_stored_rows(totals: MaterializedTables) -> None:
    assert _rows(read(totals, "region_totals", max_staleness=LATER * 10)) == [("north", 10), ("south", 5)]


def test_stale_with_fail_raises_and_says_how_to_refresh(totals: MaterializedTables) -> None:
    with pytest.raises(
        StaleTableError,
        match=r"region_totals is 2:0.* behind its sources \(allowed: 1:00:00\)\. "
        r"Refresh it \(ALTER MATERIALIZED TABLE region_totals REFRESH\)",
    ):
        read(_later(totals), "region_totals")


def test_stale_with_read_anyway_warns_and_returns_the_old_rows(totals: MaterializedTables) -> None:
    with pytest.warns(StaleReadWarning, match=r"behind its sources.*reading the stored rows anyway"):
        df = read(_later(totals), "region_totals", when_stale="read-anyway")
    assert _rows(df) == [("north", 10), ("south", 5)]


def test_stale_with_refresh_refreshes_then_reads(totals: MaterializedTables) -> None:
    later = _later(totals)
    assert _rows(read(later, "region_totals", when_stale="refresh")) == [("north", 17), ("south", 5)]
    assert judge(later, "region_totals").pending_since is None


def test_unknown_policy_is_rejected(mt: MaterializedTables) -> None:
    with pytest.raises(ValueError, match=r"'inline' is not a valid WhenStale"):
        read(mt, "region_totals", when_stale="inline")
