"""Issue 46: a data file whose lowest STRING is not valid UTF-8 gets a bound Iceberg wrote as other text (U+FFFD '('
for C3 28), above the 'é' it also holds, so Spark's pushed ``s = 'é'`` skips the file. Which files hold the rows
decides Spark's answer: after a compaction rewrites that file with good bounds, the query finds the rows an
incremental refresh never saw. A table whose query compares such a column recomputes when its change adds or
removes such a file (:mod:`mt_magic.runtime.refresh.incremental.text_bounds`); a table over the same source that
compares another column keeps its strategy."""

from __future__ import annotations

import pytest
from incremental_testing import COW, assert_matches_oracle, insert_values, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.reasons import FallbackReason

pytestmark = pytest.mark.spark

WHY = FallbackReason.TEXT_BOUNDS_NOT_UTF8.sentence


def test_a_filter_on_text_whose_file_bounds_are_not_utf8_recomputes_to_sparks_answer(spark, mt) -> None:
    txt = qualified(mt, "txt")
    spark.sql(f"CREATE TABLE {txt} (k INT, s STRING) USING iceberg {COW}")
    insert_values(spark, txt, "(1, 'a')")
    run(
        mt,
        "CREATE MATERIALIZED TABLE picked FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, s FROM txt WHERE s = 'é';"
        "CREATE MATERIALIZED TABLE kept FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, s FROM txt WHERE k > 0",
    )
    # one file holding 'é' (C3 A9) and C3 28: its lower bound is U+FFFD '(' (EF BF BD 28), above 'é'
    spark.sql(
        f"INSERT INTO {txt} SELECT /*+ COALESCE(1) */ * FROM VALUES "
        "(2, 'é'), (3, CAST(unhex('C328') AS STRING)) AS v(k, s)"
    )
    assert spark.sql(f"SELECT count(*) FROM {txt} WHERE s = 'é'").first()[0] == 0  # Spark skips the file
    table = txt.split(".", 1)[1]
    compaction = f"CALL mtit.system.rewrite_data_files(table => '{table}', options => map('min-input-files', '2'))"
    for change in ("the append", "the compaction"):
        if change == "the compaction":
            spark.sql(compaction)
        outcome = refresh(mt, "picked")
        assert WHY in outcome.strategy and f"{txt}.s" in outcome.strategy, f"{change}: {outcome.strategy}"
        assert_matches_oracle(mt, "picked")
        other = refresh(mt, "kept")
        assert other.strategy.startswith("incremental"), f"{change}, a filter on k: {other.strategy}"
        assert_matches_oracle(mt, "kept")
    assert spark.table(qualified(mt, "picked")).count() == 1  # the compacted file's bounds let the filter read it
    insert_values(spark, txt, "(4, 'é')")  # a file whose bounds are text: incremental again
    assert refresh(mt, "picked").strategy.startswith("incremental")
    assert_matches_oracle(mt, "picked")
