"""A plain source dropped under a materialized table (issue 38): its own state in the status, the card's badge,
lineage, DESCRIBE and SHOW — never "fresh" — with an error naming the missing *source* and the Fix; reading with
``when_stale='read-anyway'`` returns the stored rows with a warning."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from mt_testing import OneTable, run

from mt_magic.errors import NoSuchSourceTableError
from mt_magic.runtime.inspect.read import StaleReadWarning, read
from mt_magic.runtime.manager.loop import InlineExecutor
from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.service import MaterializedTables
from mt_magic.runtime.workspace import utc_now
from mt_magic.testing import FakeClock
from mt_magic.widgets.badges import FreshnessLevel, freshness_badge
from mt_magic.widgets.lineage import lineage_text
from mt_magic.widgets.render import card_text

pytestmark = pytest.mark.spark


@pytest.fixture
def dropped(spark, mt) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """(table, source): the table refreshed once over the source, then the source dropped."""
    spark.sql("CREATE TABLE src2 (k STRING) USING iceberg")
    spark.sql("INSERT INTO src2 VALUES ('a'), ('a'), ('b')")
    run(
        mt,
        "CREATE MATERIALIZED TABLE over_src2 FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT k, count(*) AS n FROM src2 GROUP BY k",
    )
    prefix = f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}"
    spark.sql("DROP TABLE src2")
    return f"{prefix}.over_src2", f"{prefix}.src2"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(utc_now())


@pytest.fixture
def scheduled(mt, dropped: tuple[str, str], clock: FakeClock) -> Iterator[MaterializedTables]:
    """A service whose manager schedules and polls staleness (a kernel's, without its thread: ``step()``)."""
    manager = RefreshManager(
        OneTable(mt.engine, dropped[0]),  # type: ignore[arg-type]
        clock=clock,
        executor=InlineExecutor(),
        staleness_every=timedelta(0),
    )
    yield MaterializedTables(mt.engine, manager, background=False)
    manager.stop()


def message(table: str, source: str) -> str:
    return (
        f"{table} reads the source table {source}, which does not exist in the catalog (dropped or renamed): "
        f"{table} keeps its stored rows but cannot be refreshed. Fix: re-create {source}, or ALTER MATERIALIZED "
        f"TABLE {table} AS a query that does not read it, or DROP MATERIALIZED TABLE {table}."
    )


def test_a_dropped_source_is_its_own_state_with_the_fix_everywhere(
    spark, scheduled: MaterializedTables, dropped: tuple[str, str], clock: FakeClock
) -> None:
    table, source = dropped
    mt = scheduled
    mt.manager.step()  # discovery, then the staleness poll finds the source gone
    status = mt.status(table)
    assert status.missing_source is not None and status.missing_source.source == source
    assert status.missing_source.message == message(table, source)
    assert status.staleness is None and status.last_error is None
    badge = freshness_badge(status)
    assert badge.level is FreshnessLevel.SOURCE_MISSING and badge.label == f"source missing · {source}"
    text = card_text(status, None)
    assert "fresh" not in text.split("\n")[1] and f"  source missing: {message(table, source)}" in text
    assert "staleness 0s" not in text and "NoSuchMaterializedTableError" not in text

    lines = lineage_text(mt.lineage(table), {s.name: s for s in mt.statuses()}).splitlines()
    assert f"{table} [source missing · {source}] ← {source}" in lines
    assert f"plain Iceberg sources: {source} (missing)" in lines

    facts = {row[0]: row[1] for row in run(mt, "DESCRIBE MATERIALIZED TABLE over_src2")[0].listing.rows}
    assert facts["# state"] == f"scheduled · source missing: {source}"
    assert facts["# staleness"] == "unknown (a source is missing)"
    assert facts["# source missing"] == message(table, source) and "# last error" not in facts
    shown = run(mt, "SHOW MATERIALIZED TABLES")[0].listing.rows
    assert [row[3:5] for row in shown if row[0] == table] == [
        (f"scheduled · source missing: {source}", "unknown (a source is missing)")
    ]

    spark.sql("CREATE TABLE src2 (k STRING) USING iceberg")  # the Fix's first way
    clock.advance(seconds=1)
    mt.manager.step()
    assert mt.status(table).missing_source is None and freshness_badge(mt.status(table)).level is not (
        FreshnessLevel.SOURCE_MISSING
    )


def test_a_refresh_over_a_dropped_source_fails_with_the_sources_error(mt, dropped: tuple[str, str]) -> None:
    table, source = dropped
    with pytest.raises(NoSuchSourceTableError) as refused:
        run(mt, "ALTER MATERIALIZED TABLE over_src2 REFRESH")
    assert str(refused.value) == message(table, source)
    status = mt.status(table)
    assert status.missing_source is not None and status.missing_source.source == source
    assert freshness_badge(status).level is FreshnessLevel.SOURCE_MISSING


def test_read_anyway_returns_the_stored_rows_with_a_warning(mt, dropped: tuple[str, str]) -> None:
    table, source = dropped
    with pytest.warns(StaleReadWarning, match="Reading the stored rows anyway") as warned:
        rows = read(mt, "over_src2", when_stale="read-anyway").collect()
    assert sorted((r.k, r.n) for r in rows) == [("a", 2), ("b", 1)]
    assert str(warned[0].message) == f"{message(table, source)} Reading the stored rows anyway."
    with pytest.raises(NoSuchSourceTableError, match="Fix: re-create"):
        read(mt, "over_src2", when_stale="fail")


def test_the_manager_holds_a_table_over_a_dropped_source_and_refreshes_it_once_the_source_is_back(
    spark, scheduled: MaterializedTables, dropped: tuple[str, str], clock: FakeClock
) -> None:
    """No refresh is tried while the source is missing (before: one failed attempt per backoff, then FAILED until
    ALTER … RESUME); the first staleness poll that finds it again refreshes the table, with no RESUME."""
    table, source = dropped
    mt = scheduled
    refreshes = len(mt.history(table).records)
    for _ in range(10):  # ten freshness intervals
        mt.manager.step()
        clock.advance(minutes=1)
    assert mt.manager.failures(table) == [] and len(mt.history(table).records) == refreshes
    assert mt.status(table).missing_source is not None

    spark.sql("CREATE TABLE src2 (k STRING) USING iceberg")
    spark.sql("INSERT INTO src2 VALUES ('c')")
    clock.advance(seconds=1)
    mt.manager.step()
    status = mt.status(table)
    assert (
        status.missing_source is None and status.last_error is None and len(mt.history(table).records) == refreshes + 1
    )
    assert [(r.k, r.n) for r in spark.table(table).collect()] == [("c", 1)]
