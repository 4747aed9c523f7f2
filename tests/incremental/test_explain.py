"""``explain``: the plan of a CREATE before it runs and of an existing table, from metadata only."""

from __future__ import annotations

import pytest
from incremental_testing import COW, MOR, qualified, run

from mt_magic.runtime.refresh.incremental import FallbackReason, Strategy, explain
from mt_magic.sql import parse_cell

pytestmark = pytest.mark.spark

DWS = """
CREATE MATERIALIZED TABLE dws PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' MINUTE
AS SELECT ds, COALESCE(hh, 'day') AS hh, count(*) AS pv, count(DISTINCT user_id) AS uv
   FROM (SELECT ds, date_format(vtime, 'HH') AS hh, user_id FROM log) tmp
   GROUP BY GROUPING SETS ((ds), (ds, hh))
"""


def test_explain_a_create_statement_before_it_runs(mt, spark) -> None:
    spark.sql(f"CREATE TABLE log (user_id INT, vtime TIMESTAMP, ds STRING) USING iceberg PARTITIONED BY (ds) {MOR}")

    explanation = explain(mt.workspace, parse_cell(DWS)[0])

    assert explanation.on_appends is Strategy.AFFECTED_GROUPS and explanation.fallback_reasons == ()
    text = str(explanation)
    assert text.startswith(f"{qualified(mt, 'dws')}: CONTINUOUS\n  query:")
    assert "groups located by:  ds, hh (input filtered by ds)" in text
    assert "writes:             only the partitions the change touches (ds)" in text
    assert (
        "write.delete.mode, write.update.mode, write.merge.mode = merge-on-read: such writes add delete "
        "files, read from the data files they touch"
    ) in text
    assert not mt.workspace.catalog.exists(qualified(mt, "dws"))


def test_explain_an_existing_table_lists_fallbacks_and_the_next_refresh(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    spark.sql("INSERT INTO src VALUES (1, 10)")
    run(
        mt,
        """
        CREATE MATERIALIZED TABLE sums FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, sum(v) AS s FROM src GROUP BY k;
        CREATE MATERIALIZED TABLE firsts FRESHNESS = INTERVAL '1' MINUTE
          AS SELECT k, v FROM src ORDER BY v LIMIT 1""",
    )
    spark.sql("INSERT INTO src VALUES (2, 20)")

    sums = explain(mt.workspace, qualified(mt, "sums"))
    assert sums.next_refresh == (
        f"incremental: {Strategy.AGGREGATE_MERGE.label} ({qualified(mt, 'src')}: appends (1 snapshot(s)))"
    )
    assert sums.engine.startswith("appends in process (DuckDB, no Spark job) while delta plus table ≤ 1,000,000")
    assert f"  engine:             {sums.engine}" in str(sums)
    firsts = str(explain(mt.workspace, qualified(mt, "firsts")))
    assert "engine:" not in firsts  # every refresh recomputes, on Spark
    assert f"    - {FallbackReason.LIMIT.sentence} [LIMIT]" in firsts
    assert f"    - {FallbackReason.ORDER_BY.sentence} [ORDER_BY]" in firsts
    _, definition = mt.workspace.catalog.load_materialized(qualified(mt, "sums"))
    assert definition.mode_reason.endswith(
        "CONTINUOUS · incremental (merge the aggregated delta on appends; "
        "recompute the affected groups on updates/deletes)"
    )
