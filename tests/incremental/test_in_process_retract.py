"""Updates, deletes and upserts of one source refresh in process (DuckDB, no Spark job) — a GROUP BY by "merge the
signed delta", a projection by "apply inserts and deletes" — on copy-on-write and merge-on-read sources, and each
refresh equals the query recomputed by Spark, as does a table built on it, which reads the in-process commit through
Iceberg's changelog."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest
from incremental_testing import COW, MOR, V3, assert_matches_oracle, insert_values, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS
from mt_magic.runtime.refresh.incremental.reasons import Strategy
from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import RefreshTrigger

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
