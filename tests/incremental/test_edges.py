"""Edges of the incremental path: a source that was empty, a CREATE column list (a renaming wrapper), and
group keys of date, timestamp and decimal types located by literal filters, the one-stage small merge, and a
partition recomputed whole when it has many touched groups."""

from __future__ import annotations

import pytest
from incremental_testing import COW, assert_matches_oracle, qualified, refresh, run
from notebook_settings import session_settings

from mt_magic.runtime.refresh.incremental import Strategy
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark


def test_a_source_empty_at_the_last_refresh_contributes_its_whole_table(mt, spark) -> None:
    spark.sql(f"CREATE TABLE facts (k INT, v INT) USING iceberg {COW}")
    spark.sql(f"CREATE TABLE dims (k INT, name STRING) USING iceberg {COW}")
    spark.sql("INSERT INTO facts VALUES (1, 10), (2, 20), (2, 5)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE named FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT f.k, d.name, f.v FROM facts f JOIN dims d ON f.k = d.k",
    )
    _, state = mt.workspace.catalog.load(qualified(mt, "named")).last_refresh()
    assert state.snapshot_of(qualified(mt, "dims")) is None
    spark.sql("INSERT INTO dims VALUES (1, 'one'), (2, 'two')")
    spark.sql("INSERT INTO facts VALUES (1, 1)")

    outcome = refresh(mt, "named")

    assert outcome.strategy.startswith(f"incremental: {Strategy.APPEND_DELTA.label}")
    assert_matches_oracle(mt, "named")
    assert spark.table("named").count() == 4


def test_a_column_list_wrapper_keeps_groups_locatable(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    spark.sql("INSERT INTO src VALUES (1, 10), (2, 20)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE listed (k, total BIGINT, n) FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT k, sum(v) AS total, count(*) AS n FROM src GROUP BY k",
    )
    spark.sql("INSERT INTO src VALUES (1, 5), (3, 30)")
    # the cast makes `total` an expression of an aggregate: not mergeable, but k still locates groups
    assert refresh(mt, "listed").strategy.startswith(f"incremental: {Strategy.AFFECTED_GROUPS.label}")
    assert_matches_oracle(mt, "listed")
    spark.sql("DELETE FROM src WHERE k = 2")
    assert refresh(mt, "listed").strategy.startswith(f"incremental: {Strategy.AFFECTED_GROUPS.label}")
    assert_matches_oracle(mt, "listed")


def test_date_timestamp_and_decimal_keys_slice_exactly(mt, spark) -> None:
    spark.sql(f"CREATE TABLE events (day DATE, at TIMESTAMP, price DECIMAL(8, 2), u INT) USING iceberg {COW}")
    spark.sql("""INSERT INTO events VALUES
        (DATE '2024-12-16', TIMESTAMP '2024-12-16 10:00:00.000001', 1.50, 1),
        (DATE '2024-12-16', TIMESTAMP '2024-12-16 10:00:00.000001', 2.25, 2),
        (DATE '2024-12-17', TIMESTAMP '2024-12-17 23:59:59.999999', 1.50, 1),
        (NULL, NULL, NULL, 3)""")
    run(
        mt,
        "CREATE MATERIALIZED TABLE uv FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT day, at, price, count(DISTINCT u) AS users FROM events GROUP BY day, at, price",
    )
    spark.sql("""INSERT INTO events VALUES (DATE '2024-12-16', TIMESTAMP '2024-12-16 10:00:00.000001', 1.50, 9),
                                           (NULL, NULL, NULL, 4)""")
    outcome = refresh(mt, "uv")
    assert (outcome.kind, outcome.strategy.split(" · ")[0]) == (
        RefreshKind.INCREMENTAL,
        f"incremental: {Strategy.AFFECTED_GROUPS.label}",
    )
    assert_matches_oracle(mt, "uv")
    spark.sql("DELETE FROM events WHERE u = 2")
    assert refresh(mt, "uv").kind is RefreshKind.INCREMENTAL
    assert_matches_oracle(mt, "uv")


def test_historic_dates_slice_exactly(mt, spark) -> None:
    """Regression (the soak's seed 7, batch 89): a slice listing DATE '0001-01-01' failed the refresh (PySpark's
    date literal goes through ``java.sql.Date.valueOf`` of ``strftime('%Y-%m-%d')``: '1-01-01'), and a date in
    the Julian-Gregorian gap (1582-10-05 … 14) became another day there, so its rows were not replaced."""
    spark.sql(f"CREATE TABLE old_days (day DATE, u INT) USING iceberg {COW}")
    days = ("0001-01-01", "0999-12-31", "1500-03-01", "1582-10-10", "1582-10-15", "2024-12-16")
    spark.sql(f"INSERT INTO old_days VALUES {', '.join(f'(DATE {chr(39)}{d}{chr(39)}, 1)' for d in days)}")
    run(
        mt,
        "CREATE MATERIALIZED TABLE old_uv FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT day, count(DISTINCT u) AS users FROM old_days GROUP BY day",
    )
    spark.sql(f"INSERT INTO old_days VALUES {', '.join(f'(DATE {chr(39)}{d}{chr(39)}, 2)' for d in days)}")
    outcome = refresh(mt, "old_uv")
    assert outcome.strategy.startswith(f"incremental: {Strategy.AFFECTED_GROUPS.label}"), outcome.strategy
    assert_matches_oracle(mt, "old_uv")
    assert sorted(r.users for r in spark.table("old_uv").collect()) == [2] * len(days)


def test_a_small_merge_runs_as_one_spark_stage(mt, spark) -> None:
    """A small delta merged into a small table: one job, one stage — no shuffle between the delta's partial
    aggregate, the table's rows and the write (each shuffle is a stage of fixed cost on every refresh)."""
    from datetime import datetime, timezone

    from mt_magic.runtime.status import RefreshRequest
    from mt_magic.vocabulary import RefreshTrigger

    spark.sql(f"CREATE TABLE clicks (k INT, v INT) USING iceberg {COW}")
    spark.sql("INSERT INTO clicks SELECT CAST(id % 50 AS INT), CAST(id AS INT) FROM range(1000)")
    # ANSI off (the table keeps its defining session's setting): under ANSI, PySpark 4's default, a BIGINT sum is at
    # risk of overflow and each merge first probes the delta's mass, a job of its own (incremental/sum_mass.py)
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        run(
            mt,
            "CREATE MATERIALIZED TABLE click_totals WITH ('incremental.engine' = 'spark') "  # else: in process, no job
            "FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, count(*) AS n, sum(v) AS total, max(v) AS top "
            "FROM clicks GROUP BY k",
        )
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)
    spark.sql("INSERT INTO clicks SELECT CAST(id % 70 AS INT), CAST(id AS INT) FROM range(500)")
    request = RefreshRequest(
        qualified(mt, "click_totals"), RefreshTrigger.SCHEDULED, datetime.now(timezone.utc), job_group="one-stage"
    )

    outcome = mt.engine.refresh(request)

    assert outcome.strategy.startswith(f"incremental: {Strategy.AGGREGATE_MERGE.label}")
    tracker = spark.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup("one-stage")]
    assert [len(job.stageIds) for job in jobs] == [1]
    assert_matches_oracle(mt, "click_totals")


def test_many_touched_groups_in_a_partition_recompute_the_whole_partition(mt, spark) -> None:
    """Past SCOPED_MAX_VALUES groups in the touched partition, the slice is the partition (coarser, exact);
    the other partitions keep their rows and files."""
    from mt_magic.runtime.refresh.incremental.strategies import SCOPED_MAX_VALUES

    spark.sql(f"CREATE TABLE visits (ds STRING, item INT, u INT) USING iceberg PARTITIONED BY (ds) {COW}")
    spark.sql(
        "INSERT INTO visits SELECT IF(id % 2 = 0, 'd1', 'd2'), CAST(id % 300 AS INT), CAST(id AS INT) FROM range(2000)"
    )
    run(
        mt,
        "CREATE MATERIALIZED TABLE daily_items PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT ds, item, count(*) AS n, count(DISTINCT u) AS users FROM visits GROUP BY ds, item",
    )
    untouched = {
        r.file_path
        for r in spark.sql(
            f"SELECT file_path FROM {qualified(mt, 'daily_items')}.files WHERE partition.ds = 'd1'"
        ).collect()
    }
    touched = 4 * SCOPED_MAX_VALUES
    spark.sql(f"INSERT INTO visits SELECT 'd2', CAST(id AS INT), CAST(id AS INT) + 5000 FROM range({touched})")

    outcome = refresh(mt, "daily_items")

    assert outcome.strategy == f"incremental: {Strategy.AFFECTED_PARTITIONS.label} · partitions ds (1 value(s))"
    assert_matches_oracle(mt, "daily_items")
    kept = {
        r.file_path
        for r in spark.sql(
            f"SELECT file_path FROM {qualified(mt, 'daily_items')}.files WHERE partition.ds = 'd1'"
        ).collect()
    }
    assert kept == untouched


def test_a_finer_slice_is_dropped_only_inside_bounding_partitions() -> None:
    from mt_magic.runtime.refresh.incremental.slices import SliceValues
    from mt_magic.runtime.refresh.incremental.strategies import SCOPED_MAX_VALUES, _coarsened

    day = SliceValues("ds", "string", ("d2",), False)
    few = SliceValues("item", "int", tuple(range(SCOPED_MAX_VALUES)), False)
    many = SliceValues("item", "int", tuple(range(SCOPED_MAX_VALUES + 1)), True)
    assert _coarsened({"ds": day, "item": few}, ["ds"], keyed=False) == {"ds": day, "item": few}
    assert _coarsened({"ds": day, "item": many}, ["ds"], keyed=False) == {"ds": day}
    assert _coarsened({"ds": day, "item": many}, [], keyed=False) == {"ds": day, "item": many}  # no partition bound
    assert _coarsened({"item": many}, ["ds"], keyed=False) == {"item": many}  # partitions not located
    assert _coarsened({"ds": day, "item": many}, ["ds"], keyed=True) == {"ds": day, "item": many}


def test_a_join_key_compared_across_types_recomputes_its_keys(mt, spark) -> None:
    """``f.b = d.i`` (BOOLEAN with INT: Spark's join coerces them) with its NULL-supplying side changed: the
    touched keys (BOOLEAN values) restrict only the source whose key has their type — ``i IN (true)`` is no
    filter Spark accepts (the chain soak's b30_c3_4, seed 535, failed its refresh with it). ANSI off: under ANSI
    (PySpark 4's default) Spark refuses ``b = i`` itself."""
    with session_settings(spark, {"spark.sql.ansi.enabled": "false"}):
        _join_across_types(mt, spark)


def _join_across_types(mt, spark) -> None:  # type: ignore[no-untyped-def]
    spark.sql(f"CREATE TABLE flags (b BOOLEAN, s STRING) USING iceberg {COW}")
    spark.sql(f"CREATE TABLE codes (i INT, n STRING) USING iceberg {COW}")
    spark.sql("INSERT INTO flags VALUES (true, 't'), (false, 'f'), (NULL, 'n')")
    spark.sql("INSERT INTO codes VALUES (1, 'one'), (0, 'zero'), (2, 'two')")
    run(
        mt,
        "CREATE MATERIALIZED TABLE typed FRESHNESS = INTERVAL '1' MINUTE "
        "AS SELECT f.b, f.s, d.n FROM flags f LEFT OUTER JOIN codes d ON f.b = d.i",
    )
    spark.sql("INSERT INTO codes VALUES (1, 'uno')")

    outcome = refresh(mt, "typed")

    assert outcome.strategy.startswith(f"incremental: {Strategy.AFFECTED_KEYS.label}"), outcome.strategy
    assert_matches_oracle(mt, "typed")
    spark.sql("DELETE FROM codes WHERE i = 0")
    refresh(mt, "typed")
    assert_matches_oracle(mt, "typed")
