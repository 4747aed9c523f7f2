"""A refresh held by its expectations under the real manager (issue 49): the table's status carries the held state
(the expectation, the rows, a sample, the Fix) from the error's facts, the card reads it, and the refresh after the
source is fixed publishes and clears it. A real SparkSession, the real REST catalog, the real engine under a started
RefreshManager (discovery narrowed to this test's table)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from mt_testing import OneTable, run
from shared_catalog import CATALOG

from mt_magic.runtime.manager.refresh_manager import RefreshManager
from mt_magic.runtime.manager.schedule import RetryPolicy
from mt_magic.runtime.refresh.audit import ExpectationsHeldError
from mt_magic.widgets.render import detail_rows, title_html

pytestmark = pytest.mark.spark

WAIT = 240.0
"""A bound for each wait (a loaded machine), never an expected duration."""


def test_a_held_refresh_is_the_tables_held_state_until_the_fixed_source_publishes(mt, spark) -> None:
    spark.sql("CREATE TABLE held_src (id INT, amount INT) USING iceberg")
    spark.sql("INSERT INTO held_src VALUES (1, 10)")
    run(
        mt,
        "CREATE MATERIALIZED TABLE held_t (CONSTRAINT positive EXPECT (amount >= 0) ON VIOLATION FAIL UPDATE) "
        "FRESHNESS = INTERVAL '1' HOUR AS SELECT id, amount FROM held_src",
    )
    name = f"{CATALOG}.{mt.workspace.default_namespace}.held_t"
    manager = RefreshManager(
        OneTable(mt.engine, name),  # type: ignore[arg-type]
        retry=RetryPolicy(base=timedelta(hours=1), max_delay=timedelta(hours=1), jitter=0.0),  # no retry by itself
    )
    manager.start()
    try:
        assert manager.status(name).held is None
        spark.sql("INSERT INTO held_src VALUES (2, -5)")
        with pytest.raises(ExpectationsHeldError):
            manager.refresh_now(name).result(timeout=WAIT)
        status = manager.status(name)
        assert status.held is not None
        [failed] = status.held.expectations
        assert (failed.name, failed.failed) == ("positive", 1) and failed.checked in (1, 2)  # the delta or the table
        assert failed.sample == ("id=2, amount=-5",)
        assert status.held.main_snapshot == mt.workspace.catalog.load(name).current_snapshot_id
        assert "publish' = 'held'" in status.held.fix
        shown = dict(detail_rows(status))["held"]
        assert shown.startswith(f"expectation positive failed on 1 of {failed.checked} rows")
        assert "HELD: positive" in title_html(status)
        assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, 10)]

        spark.sql("DELETE FROM held_src WHERE amount < 0")  # the source fixed
        spark.sql("INSERT INTO held_src VALUES (3, 30)")
        manager.refresh_now(name).result(timeout=WAIT)
        status = manager.status(name)
        assert status.held is None and status.last_error is None
        assert "held" not in dict(detail_rows(status)) and "mt-held" not in title_html(status)
        assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, 10), (3, 30)]
    finally:
        manager.stop()
