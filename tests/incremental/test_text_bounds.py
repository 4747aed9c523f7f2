"""Issue 46: a data file whose lowest STRING is not valid UTF-8 gets a bound Iceberg wrote as other text (U+FFFD), above
its own values, so a pushed filter skips it. The incremental append scan reads the appended file, the query at the
pinned snapshot the file a compaction wrote from it: a delta join missed rows Spark's query counts. Such a change
recomputes (:func:`mt_magic.runtime.refresh.incremental.changes.text_bounds_replaced`)."""

from __future__ import annotations

import pytest
from incremental_testing import assert_matches_oracle, insert_values, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.reasons import FallbackReason

pytestmark = pytest.mark.spark


def test_a_file_whose_text_bound_is_not_utf8_recomputes_and_equals_the_query(spark, mt) -> None:
    facts, dims = qualified(mt, "facts"), qualified(mt, "dims")
    spark.sql(f"CREATE TABLE {facts} (i INT, k DECIMAL(10, 2), s STRING) USING iceberg")
    spark.sql(f"CREATE TABLE {dims} (k DECIMAL(10, 2), dt DATE) USING iceberg")
    insert_values(spark, dims, "(-0.01, DATE '1970-01-01')", "(NULL, NULL)")
    insert_values(spark, facts, "(1, -0.01, 'é')", "(5, 0, 'a')")
    run(
        mt,
        "CREATE MATERIALIZED TABLE by_day WITH ('incremental' = 'always') FRESHNESS = INTERVAL '1' MINUTE AS "
        f"SELECT d.dt, count(*) AS n, sum(f.i) AS total FROM {facts} f JOIN {dims} d ON f.k <=> d.k AND f.s = 'é' "
        "GROUP BY d.dt",
    )
    # one file holding 'é' (C3 A9) and C3 28: its lower bound is U+FFFD '(' (EF BF BD 28), above 'é'
    spark.sql(
        f"INSERT INTO {facts} SELECT /*+ COALESCE(1) */ * FROM VALUES "
        "(2, -0.01, 'é'), (3, NULL, 'é'), (4, 0, CAST(unhex('C328') AS STRING)) AS v(i, k, s)"
    )
    table = facts.split(".", 1)[1]
    spark.sql(f"CALL mtit.system.rewrite_data_files(table => '{table}', options => map('min-input-files', '2'))")
    insert_values(spark, dims, "(7, DATE '2024-12-31')")  # both sources changed: a delta join's two terms
    outcome = refresh(mt, "by_day")
    assert_matches_oracle(mt, "by_day")
    assert FallbackReason.TEXT_BOUNDS_NOT_UTF8.sentence in outcome.strategy, outcome.strategy
    insert_values(spark, facts, "(6, -0.01, 'é')")  # a later plain append is incremental again
    assert refresh(mt, "by_day").strategy.startswith("incremental"), "appends after the recompute"
    assert_matches_oracle(mt, "by_day")
