"""A refresh whose query no longer fits its sources (a source's column dropped since CREATE) fails with Spark's
problem without the generated query's position or plan, and a Fix naming the ALTER that repairs it (issue 38)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from mt_testing import run

from mt_magic.errors import RefreshError
from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import RefreshTrigger

pytestmark = pytest.mark.spark


def test_a_dropped_source_column_fails_the_refresh_with_the_problem_and_the_fix(mt, spark) -> None:
    spark.sql("CREATE TABLE rf_src (k STRING, v INT, w INT) USING iceberg")
    spark.sql("INSERT INTO rf_src VALUES ('a', 1, 2)")
    run(mt, "CREATE MATERIALIZED TABLE rf_t AS SELECT k, v FROM rf_src")
    spark.sql("ALTER TABLE rf_src DROP COLUMN v")
    spark.sql("INSERT INTO rf_src VALUES ('b', 3)")
    table = f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}.rf_t"
    with pytest.raises(RefreshError) as failed:
        mt.engine.refresh(RefreshRequest(table, RefreshTrigger.MANUAL, datetime.now(timezone.utc)))
    spark_4 = "A column, variable, or function parameter"  # Spark 4's words for Spark 3.5's
    assert str(failed.value).replace(spark_4, "A column or function parameter") == (
        f"refresh of {table} failed: its query no longer fits its sources: A column or function parameter with name "
        f"`v` cannot be resolved. Fix: use one of the columns Spark sees: `k`, `w`; then ALTER MATERIALIZED TABLE "
        f"{table} AS the corrected query."
    )
