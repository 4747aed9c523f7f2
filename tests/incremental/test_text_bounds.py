"""Issue 46: a data file whose lowest STRING is not valid UTF-8 gets a bound Iceberg wrote as other text (U+FFFD '('
for C3 28), above the 'é' it also holds, so Spark's pushed ``s = 'é'`` skips the file. Which files hold the rows
decides Spark's answer: after a compaction rewrites that file with good bounds, the query finds the rows an
incremental refresh never saw. A table whose query compares such a column recomputes when its change adds or
removes such a file (:mod:`mt_magic.runtime.refresh.incremental.text_bounds`); a table over the same source that
compares another column keeps its strategy. A join's unchanged table needs no such rule: the in-process path refuses
its text (``guards.check_readable``) and Spark's delta join reads it through the same files as the query."""

from __future__ import annotations

import logging

import pytest
from incremental_testing import COW, assert_matches_oracle, insert_values, oracle, qualified, refresh, run

from mt_magic.runtime.refresh.incremental.reasons import FallbackReason
from mt_magic.vocabulary import RefreshEngine

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


def test_a_join_whose_unchanged_table_has_such_bounds_refuses_in_process_and_equals_spark(spark, mt, caplog) -> None:
    facts, dims = qualified(mt, "facts"), qualified(mt, "dims")
    spark.sql(f"CREATE TABLE {facts} (id BIGINT, k INT, s STRING) USING iceberg")
    spark.sql(f"CREATE TABLE {dims} (k INT, s STRING) USING iceberg")
    spark.sql(  # one file of the dimension, lower bound U+FFFD '(' above its 'é'
        f"INSERT INTO {dims} SELECT /*+ COALESCE(1) */ * FROM VALUES "
        "(1, 'é'), (2, CAST(unhex('C328') AS STRING)) AS v(k, s)"
    )
    insert_values(spark, facts, "(1, 1, 'é')")
    run(  # Spark pushes f.s = 'é' through the ON equality into the dimension's scan; d.s = 'é' directly
        mt,
        f"CREATE MATERIALIZED TABLE on_s FRESHNESS = INTERVAL '1' MINUTE AS "
        f"SELECT f.id, d.k FROM {facts} f JOIN {dims} d ON f.s = d.s WHERE f.s = 'é';"
        f"CREATE MATERIALIZED TABLE by_k FRESHNESS = INTERVAL '1' MINUTE AS "
        f"SELECT f.id, d.s FROM {facts} f JOIN {dims} d ON f.k = d.k WHERE d.s = 'é'",
    )
    insert_values(spark, facts, "(10, 1, 'é')", "(11, 2, 'é')")
    caplog.set_level(logging.INFO, logger="mt_magic.runtime.refresh.incremental.in_process.run")
    for name in ("on_s", "by_k"):
        outcome = refresh(mt, name)
        assert outcome.engine is RefreshEngine.SPARK, f"{name}: {outcome.strategy}"
        assert "delta join (1 of 2 sources changed)" in outcome.strategy, f"{name}: {outcome.strategy}"
        assert f"the source {dims}" in caplog.text and "UTF" in caplog.text, f"{name}: {caplog.text}"
        caplog.clear()
        assert_matches_oracle(mt, name)
        assert oracle(mt, name)[1] == {}  # Spark's answer skips the dimension's file: in process it found rows
