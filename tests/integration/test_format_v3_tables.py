"""Materialized tables on format version 3: the table itself (``WITH ('format-version' = '3')``) and v3 sources.

Appends to a v3 source refresh incrementally as on v2 (the delta is an incremental append scan). A
merge-on-read DELETE on a v3 source writes a deletion vector, a delete file that Iceberg's changelog scan
refuses (as it refuses v2 position deletes): the next refresh reads the rows of the data file it touches at
both snapshots instead and stays incremental (``tests/incremental/test_merge_on_read.py`` has the rest).
The refreshes run on Spark: pyiceberg 0.10, the in-process engine's writer, cannot write v3 manifests, so the
in-process gate refuses a v3 table and ``%mt explain`` says so (a v3 source it only reads runs in process:
``tests/incremental/test_in_process_retract.py``).
"""

from __future__ import annotations

import pytest
from mt_testing import run, utc
from shared_catalog import CATALOG

from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import RefreshEngine, RefreshKind, RefreshTrigger

pytestmark = pytest.mark.spark


def _rows(spark, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def test_a_v3_materialized_table_over_a_v3_source(mt, spark) -> None:  # type: ignore[no-untyped-def]
    spark.sql("CREATE TABLE v3_src (k INT, v INT) USING iceberg TBLPROPERTIES ('format-version' = '3')")
    # one data file, so that deleting k = 2 below leaves live rows in it (a deletion vector, not a dropped file)
    spark.sql("INSERT INTO v3_src SELECT /*+ COALESCE(1) */ * FROM VALUES (1, 10), (2, 20), (4, 40) AS t(k, v)")
    run(
        mt,
        """
        CREATE MATERIALIZED TABLE v3_totals
        WITH ('format-version' = '3', 'incremental' = 'always')
        FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT k, sum(v) AS s, count(*) AS n FROM v3_src GROUP BY k
        """,
    )
    name = f"{CATALOG}.{mt.workspace.default_namespace}.v3_totals"
    iceberg = (mt.workspace.default_namespace, "v3_totals")
    assert mt.workspace.catalog.catalog.load_table(iceberg).metadata.format_version == 3
    assert _rows(spark, "SELECT * FROM v3_totals") == [(1, 10, 1), (2, 20, 1), (4, 40, 1)]

    spark.sql("INSERT INTO v3_src VALUES (1, 5), (3, 30)")
    outcome = mt.engine.refresh(RefreshRequest(name, RefreshTrigger.SCHEDULED, utc(2026, 1, 1)))
    assert outcome.kind is RefreshKind.INCREMENTAL and outcome.engine is RefreshEngine.SPARK, outcome.strategy
    assert "is an Iceberg format v3 table" in mt.explain(name).engine
    assert _rows(spark, "SELECT * FROM v3_totals") == [(1, 15, 2), (2, 20, 1), (3, 30, 1), (4, 40, 1)]
    assert mt.workspace.catalog.catalog.load_table(iceberg).metadata.next_row_id > 0  # row lineage advanced

    spark.sql("ALTER TABLE v3_src SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    spark.sql("DELETE FROM v3_src WHERE k = 2")
    deletes = spark.sql(f"SELECT count(*) FROM {CATALOG}.{mt.workspace.default_namespace}.v3_src.delete_files")
    assert deletes.first()[0] == 1  # the DELETE wrote a deletion vector, not a rewritten data file
    outcome = mt.engine.refresh(RefreshRequest(name, RefreshTrigger.SCHEDULED, utc(2026, 1, 2)))
    assert outcome.kind is RefreshKind.INCREMENTAL, outcome.strategy
    assert _rows(spark, "SELECT * FROM v3_totals") == [(1, 15, 2), (3, 30, 1), (4, 40, 1)]
