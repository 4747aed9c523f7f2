"""Tables on tables: a materialized table reading another keeps its query's answer, whichever engine refreshed
the table it reads.

The defect these pin (issue 35): an in-process aggregate merge commits an overwrite through pyiceberg, whose
DELETED manifest entries carried the snapshot id that had *added* each file; Iceberg's changelog scan keeps only
entries of the scanned snapshots, so the downstream table read the upstream's new rows without the old ones and
kept both. Every round below refreshes the upstream first (in process where the gate allows) and compares each
table with its own query over its inputs at the snapshots it recorded (``assert_matches_oracle``).
"""

from __future__ import annotations

import pytest
from incremental_testing import assert_matches_oracle, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.in_process import IN_PROCESS
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark


def test_a_filter_over_an_aggregate_refreshed_in_process_keeps_its_query(spark, mt) -> None:
    """The issue's a3/b3 case, five rounds: every refresh of ``b3`` incremental and equal to its query."""
    spark.sql("CREATE TABLE s3 (k STRING, v INT) USING iceberg")
    spark.sql("INSERT INTO s3 VALUES ('a', 1), ('b', 1), ('c', 1)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE a3 FRESHNESS = INTERVAL '10' SECOND AS SELECT k, count(*) AS n FROM s3 GROUP BY k;"
        "CREATE MATERIALIZED TABLE b3 FRESHNESS = INTERVAL '10' SECOND AS SELECT k, n FROM a3 WHERE n >= 1",
    )
    for round_ in range(5):
        spark.sql(f"INSERT INTO s3 VALUES ('a', {round_}), ('{'bd'[round_ % 2]}', 1)")
        upstream = refresh(mt, "a3")
        assert upstream.strategy.endswith(IN_PROCESS), upstream.strategy
        downstream = refresh(mt, "b3")
        assert downstream.kind is RefreshKind.INCREMENTAL, downstream.strategy
        assert_matches_oracle(mt, "a3")
        assert_matches_oracle(mt, "b3")
    rows = sorted(tuple(r) for r in spark.table(qualified(mt, "b3")).collect())
    assert rows == [("a", 6), ("b", 4), ("c", 1), ("d", 2)]


def test_a_chain_of_three_over_appends_and_row_level_changes(spark, mt) -> None:
    """Aggregates over aggregates and a filter over an aggregate of a join, the base changed by appends, a
    ``MERGE INTO`` update and a delete; each level refreshed upstream first."""
    spark.sql("CREATE TABLE facts (k STRING, d INT, v INT) USING iceberg")
    spark.sql("CREATE TABLE dims (d INT, region STRING) USING iceberg")
    spark.sql("INSERT INTO dims VALUES (1, 'north'), (2, 'south'), (3, 'north')")
    spark.sql("INSERT INTO facts VALUES ('a', 1, 1), ('b', 2, 2), ('c', 3, 3)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE per_k FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT k, d, count(*) AS n, sum(v) AS s FROM facts GROUP BY k, d;"
        "CREATE MATERIALIZED TABLE per_d FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT d, count(*) AS keys, sum(n) AS n FROM per_k GROUP BY d;"
        "CREATE MATERIALIZED TABLE busy FRESHNESS = INTERVAL '1' MINUTE AS "
        "SELECT p.d, p.n, r.region FROM per_d p JOIN dims r ON p.d = r.d WHERE p.n >= 1",
    )
    changes = [
        "INSERT INTO facts VALUES ('a', 1, 5), ('d', 2, 1)",
        "MERGE INTO facts t USING (SELECT 'b' AS k, 3 AS d) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET d = s.d",
        "INSERT INTO facts VALUES ('e', 3, 2), ('a', 1, 1)",
        "DELETE FROM facts WHERE k = 'c'",
        "INSERT INTO facts VALUES ('c', 2, 7)",
    ]
    for change in changes:
        spark.sql(change)
        for table in ("per_k", "per_d", "busy"):
            refresh(mt, table)
            assert_matches_oracle(mt, table)
