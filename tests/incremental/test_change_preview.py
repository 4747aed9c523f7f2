"""``%mt explain`` of a change before it is made (issue 39): ALTER … AS, CREATE OR ALTER, SET FRESHNESS,
SET REFRESH_MODE and RESUME say whether the table keeps its rows or rebuilds, the refreshes it will get and their
cost predicted from its history — and change nothing: not the catalog, not the manager, no event reaches a card."""

from __future__ import annotations

import pytest
from incremental_testing import COW, qualified, refresh, run

from mt_magic.api.explaining import explained_by
from mt_magic.api.statements import explained
from mt_magic.errors import MtMagicError
from mt_magic.runtime.inspect.change_preview import ChangePreview
from mt_magic.runtime.inspect.cost_history import FULL_RECOMPUTE
from mt_magic.runtime.refresh.incremental import Strategy

pytestmark = pytest.mark.spark


def _explain(mt, text: str):
    return explained_by(mt, explained(text, mt.workspace.rules))


def _everything(mt, name: str) -> tuple:
    """What a change would move: the table's metadata file and snapshot, its definition, the manager's state."""
    info, definition = mt.workspace.catalog.load_materialized(name)
    return info.iceberg.metadata_location, info.current_snapshot_id, definition, mt.manager.statuses()


def _unchanged(mt, name: str, statement: str) -> ChangePreview:
    """The preview of ``statement``, asserting that nothing changed and no event was published."""
    events: list = []
    unsubscribe = mt.subscribe(events.append)
    before = _everything(mt, name)
    try:
        preview = _explain(mt, statement)
    finally:
        unsubscribe()
    assert _everything(mt, name) == before
    assert events == []
    assert isinstance(preview, ChangePreview)
    return preview


def test_alter_as_rebuilds_and_resume_or_from_beginning_keeps_the_rows_each_with_its_predicted_cost(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    spark.sql("INSERT INTO src VALUES (1, 10), (2, 20)")
    run(
        mt,
        """
        CREATE MATERIALIZED TABLE sums FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, sum(v) AS s FROM src GROUP BY k;
        CREATE MATERIALIZED TABLE copy FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, v FROM src""",
    )
    spark.sql("INSERT INTO src VALUES (3, 30)")
    assert refresh(mt, "sums").strategy.startswith(f"incremental: {Strategy.AGGREGATE_MERGE.label}")
    sums = qualified(mt, "sums")
    history = mt.history(sums).records

    rebuilt = _unchanged(
        mt, sums, "ALTER MATERIALIZED TABLE sums AS SELECT k, sum(v) AS s, count(*) AS n FROM src GROUP BY k"
    )
    assert not rebuilt.keeps_rows
    assert rebuilt.rows == (
        "rebuilds: the next refresh recomputes the new query over all of its sources' history "
        "(START_MODE = FROM_BEGINNING), replacing its 3 row(s)"
    )
    assert rebuilt.next_refresh.startswith("full: fallback — the query changed (ALTER … AS) since the last refresh")
    assert ("query", "definition version 1 → 2") in rebuilt.changes
    assert ("schedule", "CONTINUOUS, every 1 minute") in rebuilt.changes
    assert "appends column(s) n bigint (nullable)" in rebuilt.notes
    # the appended column counts as the table's: the new definition's appends (and, with count(*), its updates
    # and deletes) may run in process
    assert rebuilt.explanation.engine.startswith("appends, updates and deletes in process (DuckDB, no Spark job)")
    initial = next(r for r in history if r.kind.value == "full")
    merge = next(r for r in history if r.kind.value == "incremental")
    assert rebuilt.first is not None and rebuilt.first.strategy == FULL_RECOMPUTE
    assert (rebuilt.first.median, rebuilt.first.runs, rebuilt.first.matched) == (initial.duration, 1, True)
    assert rebuilt.then is not None and rebuilt.then_strategy == Strategy.AGGREGATE_MERGE.label
    assert rebuilt.then.per_refresh.median == merge.duration
    assert rebuilt.then.per_hour == merge.duration * 60  # every minute
    text = str(rebuilt)
    assert text.startswith(f"ALTER MATERIALIZED TABLE {sums} AS: a preview (nothing changed)\n")
    assert "next refresh:" in text and "per hour:" in text and "refreshes after the change:" in text
    assert f"{'on appends:':<20}{Strategy.AGGREGATE_MERGE.label}" in text

    copy = qualified(mt, "copy")
    kept = _unchanged(
        mt,
        copy,
        "CREATE OR ALTER MATERIALIZED TABLE copy START_MODE = RESUME_OR_FROM_BEGINNING "
        "AS SELECT k, v, v * 2 AS w FROM src",
    )
    assert kept.keeps_rows, kept.rows
    assert kept.rows.startswith("keeps its 2 row(s) (snapshot ")
    assert "START_MODE = RESUME_OR_FROM_BEGINNING" in kept.rows
    assert kept.statement == f"CREATE OR ALTER MATERIALIZED TABLE {copy} AS"

    with pytest.raises(MtMagicError, match=r"column k changes type int → string"):
        _explain(mt, "ALTER MATERIALIZED TABLE sums AS SELECT string(k) AS k, sum(v) AS s FROM src GROUP BY k")
    with pytest.raises(MtMagicError) as refused:  # the statement's own refusal, placed in the text as typed
        _explain(mt, "ALTER MATERIALIZED TABLE sums\nAS SELECT k, sum(vv) AS s FROM src GROUP BY k")
    assert str(refused.value).startswith(f"ALTER MATERIALIZED TABLE {sums} AS, line 2, column 18: ")
    assert refused.value.fix_line() == "Fix: use one of the columns Spark sees: `v`, `k`."


def test_schedule_changes_keep_the_rows_and_price_the_new_rate(mt, spark) -> None:
    spark.sql(f"CREATE TABLE src (k INT, v INT) USING iceberg {COW}")
    spark.sql("INSERT INTO src VALUES (1, 10)")
    run(mt, "CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, v FROM src")
    name = qualified(mt, "t")
    (initial,) = mt.history(name).records

    slower = _unchanged(mt, name, "ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '5' MINUTE")
    assert slower.keeps_rows and slower.rows.startswith("keeps its 1 row(s) (the query is unchanged")
    assert ("schedule", "CONTINUOUS, every 1 minute → CONTINUOUS, every 5 minutes") in slower.changes
    assert slower.then is not None and slower.then.refreshes == 12
    # no incremental refresh yet: the append-delta estimate reads the one refresh there is, and says so
    assert not slower.then.per_refresh.matched and slower.then.per_refresh.median == initial.duration
    assert "none ran append the delta yet" in str(slower)

    full = _unchanged(mt, name, "ALTER MATERIALIZED TABLE t SET REFRESH_MODE = FULL")
    assert full.keeps_rows and "each refresh in FULL mode recomputes the whole table" in full.rows
    assert full.then_strategy == FULL_RECOMPUTE and full.then is not None and full.then.per_refresh.matched
    assert "→ FULL, cron" in dict(full.changes)["schedule"]

    run(mt, "ALTER MATERIALIZED TABLE t SUSPEND")
    suspended = _unchanged(mt, name, "ALTER MATERIALIZED TABLE t SET FRESHNESS = INTERVAL '1' HOUR")
    assert suspended.then is None and "no refreshes scheduled" in str(suspended)
    resumed = _unchanged(mt, name, "ALTER MATERIALIZED TABLE t RESUME")
    assert ("schedule", "CONTINUOUS, every 1 minute (suspended) → CONTINUOUS, every 1 minute") in resumed.changes
    assert resumed.then is not None and resumed.then.per_hour == initial.duration * 60
