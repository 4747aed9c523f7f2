"""START_MODE and converting a plain Iceberg table, on real Spark and the real REST catalog.

A table that starts later holds the query over only the source rows added after its start (decided from the
sources' snapshots), keeps refreshing incrementally on appends, and recomputes over the same rows otherwise.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from mt_testing import run

from mt_magic.catalog.views import MaterializedViews, view_name
from mt_magic.errors import MtMagicError
from mt_magic.runtime.refresh.incremental import FallbackReason, Strategy
from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import RefreshKind, RefreshTrigger

pytestmark = pytest.mark.spark

COW = (
    "TBLPROPERTIES ('write.delete.mode' = 'copy-on-write', 'write.update.mode' = 'copy-on-write', "
    "'write.merge.mode' = 'copy-on-write')"
)


def name(mt, table: str) -> str:
    return f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}.{table}"


def rows(spark, mt, table: str) -> Counter:
    return Counter(tuple(r) for r in spark.table(name(mt, table)).collect())


def refresh(mt, table: str):
    request = RefreshRequest(name(mt, table), RefreshTrigger.SCHEDULED, datetime.now(timezone.utc))
    return mt.engine.refresh(request)


def insert(mt, table: str, values: str) -> datetime:
    """Insert and return the new snapshot's commit time (a few ms apart from the next one)."""
    mt.workspace.spark.sql(f"INSERT INTO {table} VALUES {values}")
    time.sleep(0.05)
    return mt.workspace.catalog.load(name(mt, table)).snapshots[-1].committed_at


def between(first: datetime, second: datetime) -> str:
    """An instant strictly between two commits, as FROM_TIMESTAMP reads it (UTC)."""
    middle = first + (second - first) / 2
    assert first < middle < second
    return middle.strftime("%Y-%m-%d %H:%M:%S.%f")


def test_from_timestamp_holds_only_the_rows_after_it_and_refreshes_incrementally(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    insert(mt, "src", "(1, 10)")
    second = insert(mt, "src", "(2, 20)")
    third = insert(mt, "src", "(3, 30)")
    insert(mt, "src", "(4, 40)")
    start = between(second, third)
    run(
        mt,
        f"""
        CREATE MATERIALIZED TABLE recent FRESHNESS = INTERVAL '1' MINUTE START_MODE = FROM_TIMESTAMP('{start}')
          AS SELECT k, v FROM src;
        CREATE MATERIALIZED TABLE parity FRESHNESS = INTERVAL '1' MINUTE START_MODE = FROM_TIMESTAMP('{start}')
          AS SELECT k % 2 AS p, count(*) AS n, sum(v) AS s FROM src GROUP BY k % 2""",
    )
    assert rows(spark, mt, "recent") == Counter({(3, 30): 1, (4, 40): 1})
    assert rows(spark, mt, "parity") == Counter({(1, 1, 30): 1, (0, 1, 40): 1})  # COUNT(*) counts rows since

    insert(mt, "src", "(5, 50), (3, 30)")
    appended = refresh(mt, "recent")
    assert appended.strategy.startswith(f"incremental: {Strategy.APPEND_DELTA.label}")
    assert rows(spark, mt, "recent") == Counter({(3, 30): 2, (4, 40): 1, (5, 50): 1})
    merged = refresh(mt, "parity")
    assert merged.strategy.startswith(f"incremental: {Strategy.AGGREGATE_MERGE.label}")
    assert rows(spark, mt, "parity") == Counter({(1, 3, 110): 1, (0, 1, 40): 1})

    spark.sql("DELETE FROM src WHERE k IN (1, 4)")  # 1 is older than the start: never in; 4 came after it
    for table in ("recent", "parity"):
        outcome = refresh(mt, table)
        assert outcome.kind is RefreshKind.FULL
        assert outcome.strategy.startswith(f"full: fallback — {FallbackReason.START_WINDOW.sentence}")
    assert rows(spark, mt, "recent") == Counter({(3, 30): 2, (5, 50): 1})
    assert rows(spark, mt, "parity") == Counter({(1, 3, 110): 1})

    spark.sql("ALTER TABLE src ADD COLUMN note STRING")  # the start snapshot is read in today's columns
    insert(mt, "src", "(6, 60, 'new')")
    assert refresh(mt, "recent").kind is RefreshKind.FULL
    assert rows(spark, mt, "recent") == Counter({(3, 30): 2, (5, 50): 1, (6, 60): 1})

    described = {r[0]: r[1] for r in mt.describe(name(mt, "recent")).listing.rows}
    assert described["# start mode"].startswith(f"FROM_TIMESTAMP(TIMESTAMP '{start[:19]}")
    shown = mt.show_create(name(mt, "recent")).listing.text
    assert f"START_MODE = FROM_TIMESTAMP(TIMESTAMP '{start[:19]}" in shown


def test_from_now_starts_empty_and_a_full_mode_table_recomputes_over_the_rows_since(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    insert(mt, "src", "(1, 10), (2, 20)")
    run(
        mt,
        """
        CREATE MATERIALIZED TABLE fresh FRESHNESS = INTERVAL '1' MINUTE START_MODE = FROM_NOW AS SELECT k, v FROM src;
        CREATE MATERIALIZED TABLE hourly FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = FULL START_MODE = FROM_NOW
          AS SELECT count(*) AS n FROM src""",
    )
    assert rows(spark, mt, "fresh") == Counter() and rows(spark, mt, "hourly") == Counter({(0,): 1})
    insert(mt, "src", "(3, 30)")
    assert refresh(mt, "fresh").strategy.startswith(f"incremental: {Strategy.APPEND_DELTA.label}")
    assert rows(spark, mt, "fresh") == Counter({(3, 30): 1})
    assert refresh(mt, "hourly").kind is RefreshKind.FULL
    assert rows(spark, mt, "hourly") == Counter({(1,): 1})
    session = mt.engine.jobs.child_session()  # this thread's, which ran the refreshes: no window view is left
    assert not [t.name for t in session.catalog.listTables() if t.name.startswith("mt_start_window")]

    lookback = mt.workspace.catalog.load(name(mt, "fresh")).properties["mt.start-snapshots"]
    assert lookback != "{}"
    run(
        mt,
        "CREATE MATERIALIZED TABLE day FRESHNESS = INTERVAL '1' MINUTE START_MODE = FROM_NOW(INTERVAL '1' DAY) "
        "AS SELECT k, v FROM src",
    )
    assert rows(spark, mt, "day") == Counter({(1, 10): 1, (2, 20): 1, (3, 30): 1})  # the source is younger


def test_resume_or_from_beginning_continues_from_the_consumed_snapshots(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    insert(mt, "src", "(1, 10)")
    insert(mt, "src", "(2, 20)")
    run(mt, "CREATE MATERIALIZED TABLE copy FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, v FROM src")
    insert(mt, "src", "(3, 30)")  # committed after the last refresh: the new definition must bring it in once
    run(
        mt,
        "CREATE OR ALTER MATERIALIZED TABLE copy FRESHNESS = INTERVAL '1' MINUTE "
        "START_MODE = RESUME_OR_FROM_BEGINNING AS SELECT k, v, v * 2 AS w FROM src",
    )
    refresh(mt, "copy")
    assert rows(spark, mt, "copy") == Counter({(1, 10, None): 1, (2, 20, None): 1, (3, 30, 60): 1})
    insert(mt, "src", "(4, 40)")
    assert refresh(mt, "copy").strategy.startswith(f"incremental: {Strategy.APPEND_DELTA.label}")
    assert rows(spark, mt, "copy") == Counter({(1, 10, None): 1, (2, 20, None): 1, (3, 30, 60): 1, (4, 40, 80): 1})

    run(mt, "CREATE MATERIALIZED TABLE fresh START_MODE = RESUME_OR_FROM_NOW AS SELECT k FROM src")  # nothing to resume
    assert rows(spark, mt, "fresh") == Counter()


def _history(mt, table: str) -> tuple[int, ...]:
    return tuple(s.snapshot_id for s in mt.workspace.catalog.load(name(mt, table)).snapshots)


def test_a_plain_table_is_converted_in_place_only_with_the_option(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v BIGINT) USING iceberg {COW}")
    insert(mt, "src", "(1, 10), (2, 20)")
    spark.sql("CREATE TABLE plain (k INT, v BIGINT) USING iceberg")
    insert(mt, "plain", "(7, 70)")
    insert(mt, "plain", "(8, 80)")
    before = _history(mt, "plain")
    properties = dict(mt.workspace.catalog.load(name(mt, "plain")).properties)
    statement = "CREATE OR ALTER MATERIALIZED TABLE plain {with_} FRESHNESS = INTERVAL '1' MINUTE AS {query}"
    convert = "WITH ('convert-existing-table' = 'true')"
    refused = {
        ("", "SELECT k, v FROM src"): r"plain Iceberg table.*add WITH \('convert-existing-table' = 'true'\)",
        (convert, "SELECT k, CAST(v AS STRING) AS v, 1 AS x FROM src"): (
            r"the query produces column\(s\) x int the table does not have; "
            r"column v is bigint in the table but string in the query"
        ),
        (convert, "SELECT k FROM src"): r"does not produce the table's column\(s\) v bigint",
    }
    for (with_, query), message in refused.items():
        with pytest.raises(MtMagicError, match=message):
            run(mt, statement.format(with_=with_, query=query))
        assert _history(mt, "plain") == before
        assert dict(mt.workspace.catalog.load(name(mt, "plain")).properties) == properties
        assert not mt.statuses()
        assert MaterializedViews(mt.workspace.catalog).load(view_name(name(mt, "plain"))) is None

    run(mt, statement.format(with_=convert, query="SELECT CAST(k AS INT) AS k, v FROM src"))  # int→int, bigint
    after = _history(mt, "plain")
    assert after[: len(before)] == before and len(after) == len(before) + 1  # history kept, one refresh added
    assert rows(spark, mt, "plain") == Counter({(1, 10): 1, (2, 20): 1})  # FROM_BEGINNING: recomputed
    assert "convert-existing-table" not in mt.workspace.catalog.load(name(mt, "plain")).properties
    assert [s.name for s in mt.statuses()] == [name(mt, "plain")]
    info = mt.workspace.catalog.load(name(mt, "plain"))
    assert MaterializedViews(mt.workspace.catalog).of_table(info.name, info.uuid) is not None  # its Iceberg view


def test_converting_with_a_later_start_keeps_the_rows(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    insert(mt, "src", "(1, 10)")
    spark.sql("CREATE TABLE history_table (k INT, v INT) USING iceberg")
    insert(mt, "history_table", "(1, 10), (0, 0)")  # backfilled by hand up to now
    run(
        mt,
        "CREATE OR ALTER MATERIALIZED TABLE history_table WITH ('convert-existing-table' = 'true') "
        "FRESHNESS = INTERVAL '1' MINUTE START_MODE = FROM_NOW AS SELECT k, v FROM src",
    )
    assert rows(spark, mt, "history_table") == Counter({(1, 10): 1, (0, 0): 1})
    insert(mt, "src", "(2, 20)")
    refresh(mt, "history_table")
    assert rows(spark, mt, "history_table") == Counter({(1, 10): 1, (0, 0): 1, (2, 20): 1})
    _, definition = mt.workspace.catalog.load_materialized(name(mt, "history_table"))
    tags = {r[0]: r[1] for r in spark.sql(f"SELECT name, snapshot_id FROM {name(mt, 'history_table')}.refs").collect()}
    assert definition.kept_snapshot is not None and tags["mt-kept-rows"] == definition.kept_snapshot
    table = f"{mt.workspace.default_namespace}.history_table"
    spark.sql(
        f"CALL {mt.workspace.catalog.spark_name}.system.expire_snapshots(table => '{table}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )  # the tag keeps the kept rows' snapshot
    spark.sql("UPDATE src SET v = 11 WHERE k = 1")  # a row before the start: its new version counts as new
    assert refresh(mt, "history_table").kind is RefreshKind.FULL
    assert rows(spark, mt, "history_table") == Counter({(1, 10): 1, (0, 0): 1, (2, 20): 1, (1, 11): 1})


def test_a_start_in_the_future_is_refused(mt, spark) -> None:
    spark.sql("CREATE TABLE src (k INT) USING iceberg")
    future = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    with pytest.raises(MtMagicError, match=r"START_MODE = FROM_TIMESTAMP\(.*\) is in the future"):
        run(mt, f"CREATE MATERIALIZED TABLE later START_MODE = FROM_TIMESTAMP('{future}') AS SELECT k FROM src")
    assert not mt.workspace.catalog.exists(name(mt, "later"))
