"""Affected-slice refreshes of unpartitioned tables replace only the touched slices' rows, in one snapshot.

On a real Spark and catalog: a join whose key the result does not show (affected join keys, found by the hidden
key) and an aggregate that cannot merge (affected groups) refresh with one row-level ``MERGE`` whose snapshot
carries the refresh state. With ``write.merge.mode`` = merge-on-read that MERGE writes delete files for exactly the
replaced rows and adds only the recomputed ones; copy-on-write rewrites only data files holding them, and rewrites
the table instead when every data file holds one. After every
refresh the table equals the full recompute, and a refresh with nothing new is a no-op (the state was recorded).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from incremental_testing import assert_matches_oracle, qualified, refresh, run

from mt_magic.runtime.refresh import commit
from mt_magic.runtime.refresh.incremental import Strategy
from mt_magic.runtime.refresh.incremental.strategies import ROWS_NOTE
from mt_magic.vocabulary import RefreshKind

pytestmark = pytest.mark.spark

JOIN = "SELECT f.id, f.v, d.name FROM facts f LEFT JOIN dims d ON f.k = d.k"
DISTINCT = "SELECT k, count(DISTINCT v) AS n FROM facts GROUP BY k"


def _sources(spark) -> None:
    spark.sql("CREATE TABLE facts (id INT, k INT, v INT) USING iceberg")
    spark.sql("CREATE TABLE dims (k INT, name STRING) USING iceberg")
    spark.sql("INSERT INTO facts SELECT id, id % 50, id % 7 FROM range(1000) AS r(id)")
    spark.sql("INSERT INTO dims SELECT id, concat('d', id) FROM range(50) AS r(id)")


def _files(spark, mt, table: str, where: str = "true") -> int:
    """Data files of the table holding rows that match ``where``."""
    return spark.sql(f"SELECT count(DISTINCT _file) AS n FROM {qualified(mt, table)} WHERE {where}").first()["n"]


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_touched_slices_are_replaced_in_place_with_the_state_in_the_same_snapshot(mt, spark, mode) -> None:
    _sources(spark)
    options = f"WITH ('write.merge.mode' = '{mode}')"
    run(mt, f"CREATE MATERIALIZED TABLE j {options} FRESHNESS = INTERVAL '1' MINUTE AS {JOIN}")
    run(mt, f"CREATE MATERIALIZED TABLE g {options} FRESHNESS = INTERVAL '1' MINUTE AS {DISTINCT}")
    for batch in range(2):  # new facts of keys 40..49 only: j appends them as data files of their own
        spark.sql(f"INSERT INTO facts SELECT 2000 + id, 40 + id % 10, {batch} FROM range(20) AS r(id)")
        assert refresh(mt, "j").strategy.startswith(f"incremental: {Strategy.APPEND_DELTA.label}")
        assert refresh(mt, "g").kind is RefreshKind.INCREMENTAL

    spark.sql("UPDATE dims SET name = 'renamed' WHERE k IN (3, 4)")
    spark.sql("INSERT INTO facts VALUES (5000, 7, 100), (5001, NULL, 1)")  # key 7 gains a row, NULL is new
    # j: keys 3, 4, 7 and NULL touched, 3 × 20 of its rows replaced; g: group 7 replaced, group NULL added
    cases = (
        ("j", Strategy.AFFECTED_KEYS, 60, "__mt_key_0 IN (3, 4, 7) OR __mt_key_0 IS NULL"),
        ("g", Strategy.AFFECTED_GROUPS, 1, "k = 7 OR k IS NULL"),
    )
    for table, strategy, replaced, touched in cases:
        before = len(mt.workspace.catalog.load(qualified(mt, table)).snapshots)
        # copy-on-write replaces in place only when some data file holds none of the touched rows
        in_place = mode == "merge-on-read" or _files(spark, mt, table, touched) < _files(spark, mt, table)
        assert in_place or table == "g", "j's appended files hold none of the touched keys"
        outcome = refresh(mt, table)
        assert outcome.kind is RefreshKind.INCREMENTAL, outcome
        assert outcome.strategy.startswith(f"incremental: {strategy.label}"), outcome
        assert (ROWS_NOTE in outcome.strategy) == in_place, outcome
        info = mt.workspace.catalog.load(qualified(mt, table))
        assert len(info.snapshots) == before + 1  # the rows and the refresh state: one snapshot
        summary = dict(info.snapshots[-1].summary)
        assert summary.get(commit.REFRESH_ID_KEY), summary
        if mode == "merge-on-read":  # exactly the replaced rows deleted; only the recomputed rows written
            # (the file's earlier deletes are rewritten into the new delete file: net of those, the replaced rows)
            deletes = int(summary["added-position-deletes"]) - int(summary.get("removed-position-deletes", 0))
            assert deletes == replaced, summary
            assert "deleted-data-files" not in summary, summary
            assert int(summary["added-records"]) == replaced + (2 if table == "j" else 1), summary
        elif table == "j":  # copy-on-write: the appended files, which hold no touched key, stay
            assert int(summary["deleted-data-files"]) < int(summary["total-data-files"]), summary
        assert_matches_oracle(mt, table)
        assert refresh(mt, table).kind is RefreshKind.NOOP  # the state was recorded with the rows

    spark.sql("UPDATE dims SET name = 'again' WHERE k = 9")
    spark.sql("DELETE FROM facts WHERE k = 9 AND v < 3")
    with ThreadPoolExecutor(1) as worker:  # a worker thread, as the manager runs refreshes (classic: a Py4J callback)
        outcome = worker.submit(refresh, mt, "j").result()
        assert outcome.kind is RefreshKind.INCREMENTAL and ROWS_NOTE in outcome.strategy, outcome
        assert_matches_oracle(mt, "j")
        assert worker.submit(refresh, mt, "g").result().kind is RefreshKind.INCREMENTAL
        assert_matches_oracle(mt, "g")


def test_an_engine_that_drops_the_properties_still_records_the_state(mt, spark, monkeypatch) -> None:
    """A Connect server whose Iceberg predates session snapshot properties commits the MERGE without them: the
    state then lands in an empty append right after, and the next refresh finds it."""
    from mt_magic.runtime.spark import snapshot_properties

    _sources(spark)
    run(
        mt,
        f"CREATE MATERIALIZED TABLE j WITH ('write.merge.mode' = 'merge-on-read') "
        f"FRESHNESS = INTERVAL '1' MINUTE AS {JOIN}",
    )
    monkeypatch.setattr(snapshot_properties, "run_with_snapshot_properties", lambda session, props, command: command())
    spark.sql("UPDATE dims SET name = 'x' WHERE k = 1")
    before = len(mt.workspace.catalog.load(qualified(mt, "j")).snapshots)
    assert refresh(mt, "j").kind is RefreshKind.INCREMENTAL
    info = mt.workspace.catalog.load(qualified(mt, "j"))
    assert [s.operation for s in info.snapshots[before:]] == ["overwrite", "append"]
    assert info.snapshots[-1].summary.get(commit.REFRESH_ID_KEY)
    assert_matches_oracle(mt, "j")
    assert refresh(mt, "j").kind is RefreshKind.NOOP


def test_adaptive_recomputes_when_the_touched_slices_hold_most_of_the_table(mt, spark) -> None:
    """ADAPTIVE counts the table rows the touched slices hold: past the change fraction (30 %) of the table a
    recompute writes it once; below, the touched window partitions are replaced in place. The table sets the
    fraction, so its cost model stays out (the user's word wins): without it, a Spark refresh that replaces rows of
    a 120,000-row table is estimated dearer than its measured recompute whatever the change (``cost.py``)."""
    spark.sql("CREATE TABLE facts (id INT, k INT, v INT) USING iceberg")
    spark.sql("INSERT INTO facts SELECT id, id % 100, id % 13 FROM range(120000) AS r(id)")
    query = "SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY v, id) AS rn FROM facts"
    options = "WITH ('write.merge.mode' = 'merge-on-read', 'incremental.max-change-fraction' = '0.3')"
    run(mt, f"CREATE MATERIALIZED TABLE w {options} FRESHNESS = INTERVAL '1' MINUTE AS {query}")

    spark.sql("INSERT INTO facts SELECT 200000 + id, id, 0 FROM range(50) AS r(id)")  # half the partitions
    outcome = refresh(mt, "w")
    assert outcome.kind is RefreshKind.FULL, outcome
    assert "the change touches 60,000 of the table's 120,000 rows (50%), past 30%" in outcome.strategy, outcome
    assert_matches_oracle(mt, "w")

    spark.sql("INSERT INTO facts VALUES (300000, 7, 0)")  # one partition: 1,201 of 120,050 rows
    outcome = refresh(mt, "w")
    assert outcome.kind is RefreshKind.INCREMENTAL and ROWS_NOTE in outcome.strategy, outcome
    assert outcome.strategy.startswith(f"incremental: {Strategy.AFFECTED_WINDOWS.label}"), outcome
    assert_matches_oracle(mt, "w")
