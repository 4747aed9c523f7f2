"""Updates, deletes and upserts of one source refresh in process (DuckDB, no Spark job) — a GROUP BY by "merge the
signed delta", a projection by "apply inserts and deletes" — on copy-on-write and merge-on-read sources, and each
refresh equals the query recomputed by Spark, as does a table built on it, which reads the in-process commit through
Iceberg's changelog."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest
from incremental_testing import COW, MOR, V3, assert_matches_oracle, insert_values, qualified, refresh, run

from mt_magic.runtime.refresh.incremental import FallbackReason
from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import RefreshKind, RefreshTrigger

pytestmark = [pytest.mark.spark, pytest.mark.differential]

QUERY = (
    "SELECT g, count(*) AS n, count(v) AS nv, sum(v) AS s, sum(p) AS sp, min(v) AS lo, max(ts) AS hi "
    "FROM src WHERE k <> 3 GROUP BY g"
)
LAYOUTS = {"copy-on-write": COW, "merge-on-read": MOR, "v3": V3}
STEPS = [
    "UPDATE src SET v = v + 1 WHERE g = 'a' AND v = 4",
    "DELETE FROM src WHERE g = 'b' AND v = 9",  # b's max of v goes: its min/max are recomputed
    "MERGE INTO src t USING (SELECT 'c' AS g, 1 AS k) s ON t.g = s.g AND t.k = s.k "
    "WHEN MATCHED THEN UPDATE SET t.v = 40 WHEN NOT MATCHED THEN INSERT (g, k, v, p, ts) "
    "VALUES ('c', 1, 40, 1.50, TIMESTAMP '2024-12-03 00:00:00')",
    "UPDATE src SET g = 'e' WHERE g = 'c'",  # a group moves to a new one
    "DELETE FROM src WHERE g IS NULL",  # a whole group goes
    "UPDATE src SET k = 3 WHERE g = 'a' AND v = 2",  # a row leaves the WHERE
    "INSERT INTO src VALUES (1, 'f', 7, 0.25, TIMESTAMP '2024-12-04 00:00:00')",
]


def _source(spark, mt, layout: str) -> str:
    src = qualified(mt, "src")
    spark.sql(
        f"CREATE TABLE {src} (k INT, g STRING, v BIGINT, p DECIMAL(10, 2), ts TIMESTAMP) USING iceberg "
        f"{LAYOUTS[layout]}"
    )
    insert_values(
        spark,
        src,
        *(
            f"({k}, {g}, {v}, {v} + 0.25, TIMESTAMP '2024-12-01 00:00:00' + make_interval(0, 0, 0, 0, {v}, 0, 0))"
            for k, g, v in [
                (1, "'a'", 2), (2, "'a'", "NULL"), (1, "'a'", 4), (4, "'a'", 5), (1, "'b'", 9), (2, "'b'", 3),
                (1, "'c'", 1), (5, "'c'", 6), (1, "'d'", 7), (3, "'d'", 8), (1, "NULL", 8), (2, "NULL", 1),
            ]
        ),
    )  # fmt: skip
    return src


def _refreshed_in_process(spark, mt, table: str, strategy: Strategy = Strategy.AGGREGATE_RETRACT) -> str:
    group = f"retract-{random.getrandbits(32)}"
    now = datetime.now(timezone.utc)
    outcome = mt.engine.refresh(RefreshRequest(qualified(mt, table), RefreshTrigger.SCHEDULED, now, job_group=group))
    assert outcome.strategy.startswith(f"incremental: {strategy.label}"), outcome.strategy
    assert outcome.strategy.endswith(IN_PROCESS), outcome.strategy
    assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []  # no Spark job
    return outcome.strategy


@pytest.mark.parametrize("layout", ["copy-on-write", "merge-on-read", "v3"])
def test_row_level_changes_retract_in_process_and_equal_spark(spark, mt, ansi_off, layout: str) -> None:
    src = _source(spark, mt, layout)
    run(mt, f"CREATE MATERIALIZED TABLE agg FRESHNESS = INTERVAL '1' MINUTE AS {QUERY}")
    run(mt, "CREATE MATERIALIZED TABLE busy FRESHNESS = INTERVAL '1' MINUTE AS SELECT g, n, s FROM agg WHERE n > 1")
    recomputed = []
    for change in STEPS:
        spark.sql(change.replace("src", src))
        appended = change.startswith("INSERT")
        strategy = Strategy.AGGREGATE_MERGE if appended else Strategy.AGGREGATE_RETRACT
        recomputed.append("recomputed" in _refreshed_in_process(spark, mt, "agg", strategy))
        refresh(mt, "busy")  # reads agg's in-process commit as its change
        for table in ("agg", "busy"):
            assert_matches_oracle(mt, table)
    assert recomputed[1] and not recomputed[0]  # a lost max recomputes its group; a raised value does not


def test_random_updates_and_deletes_in_process_equal_spark(spark, mt, ansi_off) -> None:
    """Random rounds of updates, deletes and inserts on a merge-on-read source: every refresh in process, equal to
    the query recomputed."""
    src = _source(spark, mt, "merge-on-read")
    run(mt, f"CREATE MATERIALIZED TABLE agg FRESHNESS = INTERVAL '1' MINUTE AS {QUERY}")
    rng = random.Random(46)
    for _ in range(6):
        g = rng.choice(["'a'", "'b'", "'c'", "'d'", "'x'", "NULL"])
        v = rng.randrange(-3, 12)
        change = rng.choice(
            [
                f"UPDATE src SET v = {v} WHERE k = {rng.randrange(1, 6)}",
                f"DELETE FROM src WHERE v = {v}",
                f"UPDATE src SET g = {g} WHERE v <= {v}",
                f"INSERT INTO src VALUES ({rng.randrange(1, 6)}, {g}, {v}, {v} + 0.5, TIMESTAMP '2024-12-05 00:00:00')",
            ]
        )
        spark.sql(change.replace("src", src))
        outcome = refresh(mt, "agg")
        assert outcome.strategy.endswith(IN_PROCESS), (change, outcome.strategy)
        assert_matches_oracle(mt, "agg")


@pytest.mark.parametrize("layout", ["merge-on-read", "v3"])
def test_a_source_past_the_memory_bound_is_scanned_for_its_removed_rows(
    spark, mt, ansi_off, monkeypatch, layout: str
) -> None:
    """A source with more rows than the kernel may hold: its deleted positions are taken while its files stream by,
    and a group that lost its extreme is recomputed over the streamed source, in process, equal to Spark."""
    from mt_magic.runtime.refresh.incremental.in_process import eligibility

    src = _source(spark, mt, layout)
    run(mt, f"CREATE MATERIALIZED TABLE agg FRESHNESS = INTERVAL '1' MINUTE AS {QUERY}")
    monkeypatch.setattr(eligibility, "IN_PROCESS_MAX_ROWS", 10)  # the source holds 12 rows, the table 5 groups
    recomputed = []
    for change in STEPS[:2]:  # an update; a delete of b's max, whose group is recomputed
        spark.sql(change.replace("src", src))
        recomputed.append("recomputed" in _refreshed_in_process(spark, mt, "agg"))
        assert_matches_oracle(mt, "agg")
    assert recomputed == [False, True]
    monkeypatch.setattr(eligibility, "IN_PROCESS_MAX_SCANNED", 10)
    spark.sql(STEPS[2].replace("src", src))
    assert not refresh(mt, "agg").strategy.endswith(IN_PROCESS)  # past both bounds: Spark
    assert_matches_oracle(mt, "agg")


def test_a_lost_extreme_is_recomputed_without_reading_the_changed_files_again(spark, mt, ansi_off, monkeypatch) -> None:
    """The files a change deleted positions in are read once: while their removed rows are taken, their live rows'
    partial aggregates are kept, and a group that lost its extreme is recomputed from those and from the files the
    change did not touch (streamed), equal to Spark's answer, a file's earlier deletes left out."""
    from mt_magic.catalog import rows as catalog_rows
    from mt_magic.runtime.refresh.incremental.in_process import eligibility

    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (k INT, g STRING, v BIGINT, p DECIMAL(10, 2), ts TIMESTAMP) USING iceberg {V3}")
    for day in (1, 2, 3):  # three data files, each holding groups a, b and NULL
        insert_values(
            spark,
            src,
            *(f"({k}, {g}, {v + day}, 0.50, TIMESTAMP '2024-12-0{day} 00:00:00')" for k, g, v in [
                (1, "'a'", 10), (2, "'a'", 20), (3, "'b'", 5), (4, "NULL", 7), (5, "'b'", 30),
            ]),
        )  # fmt: skip
    run(mt, f"CREATE MATERIALIZED TABLE agg FRESHNESS = INTERVAL '1' MINUTE AS {QUERY}")
    monkeypatch.setattr(eligibility, "IN_PROCESS_MAX_ROWS", 8)  # the source's 15 rows are streamed, not held
    read_again = []
    streamed = catalog_rows.streamed_rows
    monkeypatch.setattr(
        catalog_rows,
        "streamed_rows",
        lambda table, snapshot, columns=None, skipped=(): (
            read_again.append(frozenset(skipped)) or streamed(table, snapshot, columns, skipped)
        ),
    )
    for change in [
        "DELETE FROM src WHERE ts = TIMESTAMP '2024-12-03 00:00:00' AND k = 1",  # a's max of ts in the third file
        "DELETE FROM src WHERE ts = TIMESTAMP '2024-12-03 00:00:00' AND g = 'b'",  # b's, beside the earlier delete
        "UPDATE src SET v = 40 WHERE v = 31",  # b's min of v, in the first file
    ]:
        spark.sql(change.replace("src", src))
        assert "recomputed" in _refreshed_in_process(spark, mt, "agg")
        assert_matches_oracle(mt, "agg")
    assert len(read_again) == 3 and all(read_again)  # each streamed only the files the change did not touch


def test_a_change_the_in_process_reader_refuses_is_priced_again_for_spark(spark, mt, ansi_off, monkeypatch) -> None:
    """ADAPTIVE prices a one-row update of a merge-on-read source in process (the rows scanned for its deleted
    position at a quarter): incremental. When the reader then refuses the change, Spark would read the touched
    file whole, past the fraction: the refresh recomputes, saying why, instead of running Spark's incremental
    plan at the in-process price."""
    from mt_magic.runtime.refresh.incremental.in_process import row_level
    from mt_magic.runtime.refresh.incremental.in_process.guards import DataNotExact

    src = qualified(mt, "src")
    spark.sql(f"CREATE TABLE {src} (k INT, g STRING, v BIGINT) USING iceberg {MOR}")
    rows = spark.range(200_000).selectExpr("CAST(id AS INT) AS k", "CAST(id % 5 AS STRING) AS g", "id AS v")
    rows.coalesce(1).writeTo(src).append()  # one data file: past ADAPTIVE's smallest source
    query = "SELECT g, count(*) AS n, sum(v) AS s, min(v) AS lo FROM src GROUP BY g"
    for table in ("agg", "twin"):
        run(mt, f"CREATE MATERIALIZED TABLE {table} FRESHNESS = INTERVAL '1' MINUTE AS {query}")
    spark.sql(f"UPDATE {src} SET v = -1 WHERE k = 7")
    assert refresh(mt, "agg").strategy.endswith(IN_PROCESS)  # priced in process: incremental
    assert_matches_oracle(mt, "agg")

    def refused(*args, **kwargs):
        raise DataNotExact("refused here, as a reader past its bound refuses")

    monkeypatch.setattr(row_level, "changed_rows", refused)
    outcome = refresh(mt, "twin")  # the same change, its first refresh too
    assert outcome.kind is RefreshKind.FULL, outcome.strategy
    assert FallbackReason.CHEAPER_TO_RECOMPUTE.sentence in outcome.strategy
    assert "reads 100,001 rows" in outcome.strategy  # Spark reads the touched file whole
    assert_matches_oracle(mt, "twin")
    # %mt explain states the Spark jobs each refresh ran: none in process, the recompute's on Spark
    assert "incremental: merge the signed delta, in process 0" in mt.explain(qualified(mt, "agg")).spark_jobs
    jobs = mt.explain(qualified(mt, "twin")).spark_jobs
    assert jobs.startswith("full ") and int(jobs.split(" · ")[0].split()[-1]) >= 1, jobs


PROJECTION = "SELECT k, g, v, p FROM src WHERE v > 2 OR g IS NULL"


@pytest.mark.parametrize("layout", ["copy-on-write", "merge-on-read"])
def test_a_projection_applies_updates_and_deletes_in_process(spark, mt, ansi_off, layout: str) -> None:
    src = _source(spark, mt, layout)
    run(mt, f"CREATE MATERIALIZED TABLE proj FRESHNESS = INTERVAL '1' MINUTE AS {PROJECTION}")
    run(
        mt,
        "CREATE MATERIALIZED TABLE above FRESHNESS = INTERVAL '1' MINUTE AS SELECT g, sum(v) AS s FROM proj GROUP BY g",
    )
    for change in [s for s in STEPS if not s.startswith("INSERT")]:
        spark.sql(change.replace("src", src))
        _refreshed_in_process(spark, mt, "proj", Strategy.APPLY_CHANGES)
        refresh(mt, "above")
        for table in ("proj", "above"):
            assert_matches_oracle(mt, table)


JOIN = "SELECT s.k, s.g, s.v, d.label FROM src s JOIN dim d ON s.g = d.g WHERE s.v > 1"


@pytest.mark.parametrize("layout", ["merge-on-read", "v3"])
def test_a_join_applies_one_sides_updates_and_deletes_in_process(spark, mt, ansi_off, layout: str) -> None:
    """Facts updated and deleted beside an unchanged dimension, then the dimension updated beside unchanged facts:
    each side's change runs through the query with the other side as it is, in process, equal to Spark's answer."""
    src = _source(spark, mt, layout)
    dim = qualified(mt, "dim")
    spark.sql(f"CREATE TABLE {dim} (g STRING, label STRING) USING iceberg {LAYOUTS[layout]}")
    spark.sql(f"INSERT INTO {dim} VALUES ('a', 'A'), ('b', 'B'), ('b', 'B2'), ('c', 'C'), ('e', 'E'), (NULL, 'N')")
    run(mt, f"CREATE MATERIALIZED TABLE joined FRESHNESS = INTERVAL '1' MINUTE AS {JOIN}")
    dimension = [
        "UPDATE dim SET label = 'AA' WHERE g = 'a'",
        "DELETE FROM dim WHERE label = 'B2'",  # a duplicated key: the fact rows it doubled go once
        # one key updated and one inserted: a row-level commit (a MERGE that only inserts is an append on Spark 4)
        "MERGE INTO dim t USING (SELECT * FROM VALUES ('c', 'CC'), ('d', 'D') AS v(g, label)) s ON t.g = s.g "
        "WHEN MATCHED THEN UPDATE SET t.label = s.label WHEN NOT MATCHED THEN INSERT *",
    ]
    for change in [*(s for s in STEPS if not s.startswith("INSERT")), *dimension]:
        spark.sql(change.replace("src", src).replace("dim", dim))
        _refreshed_in_process(spark, mt, "joined", Strategy.APPLY_CHANGES)
        assert_matches_oracle(mt, "joined")
