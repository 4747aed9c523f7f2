"""One change contract for every writer: a refresh's commit reads back, through the one change reader every
downstream table uses (``changes.classify`` + ``delta.register_deltas``), as exactly the rows it added and removed.

For each table layout (partitioned or not, format v2 or v3, copy-on-write or merge-on-read) one source feeds a
table per writer — a full recompute, a backfilled partition, appended deltas, aggregate merges, inserts and
deletes applied, affected groups recomputed — each refreshed in process where the gate allows and on Spark
(``'incremental.engine' = 'spark'``), over rounds of appends, a ``MERGE INTO`` update, a delete and a compaction of
the source. After every commit the change set read for it must satisfy: the deleted rows are rows the table held
(a sub-multiset of *before*), and *before* − deleted + inserted = *after*, as multisets. Where the range has no
delete files the same commit is read again with Spark's ``create_changelog_view`` (net changes), and *after* is
read with pyiceberg too; all three must agree.

The in-process overwrite failed every cell it ran in before its DELETED manifest entries carried the deleting
snapshot (``catalog/rows.py``): the changelog read its inserts alone.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter

import pytest
from incremental_testing import COW, MOR, qualified, refresh, run

from mt_magic.catalog.definitions import SourceState
from mt_magic.runtime.refresh.incremental.changes import ChangeKind, SourceChange, classify
from mt_magic.runtime.refresh.incremental.delta import register_deltas
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.vocabulary import RefreshEngine

pytestmark = [pytest.mark.spark, pytest.mark.differential]

LAYOUTS = {
    "unpartitioned-v2-cow": ("", "'format-version' = '2', " + COW[len("TBLPROPERTIES (") : -1]),
    "partitioned-v2-mor": ("PARTITIONED BY (k)", MOR[len("TBLPROPERTIES (") : -1]),
    "unpartitioned-v3-mor": ("", MOR[len("TBLPROPERTIES (") : -1].replace("'2'", "'3'")),
    "partitioned-v3-cow": ("PARTITIONED BY (k)", "'format-version' = '3', " + COW[len("TBLPROPERTIES (") : -1]),
}
WRITERS = {
    "full": ("REFRESH_MODE = FULL", "SELECT k, count(*) AS n FROM src GROUP BY k"),
    "append": ("", "SELECT k, v FROM src WHERE v > 0"),
    "merge": ("", "SELECT k, count(*) AS n, sum(v) AS s FROM src GROUP BY k"),
    "slices": ("", "SELECT k, max(v) AS top FROM src GROUP BY k"),  # deletes: the touched groups recomputed
}
ENGINES = {"auto": "", "spark": "'incremental.engine' = 'spark', "}
ROUNDS = int(os.environ.get("MT_DIFFERENTIAL_ROUNDS", "4"))
"""How many of :data:`CHANGES` run before the compaction (the second PySpark line runs 2: an append, a MERGE)."""
CHANGES = (
    "INSERT INTO src VALUES ('a', 5), ('b', 1), ('c', 3), ('d', 4)",
    "MERGE INTO src t USING (SELECT 'b' AS k) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = t.v + 10",
    "DELETE FROM src WHERE k = 'c'",
    "INSERT INTO src VALUES ('c', 7), ('a', 5)",
)


def _rows(frame) -> Counter:  # type: ignore[no-untyped-def]
    return Counter(tuple(row) for row in frame.collect())


def _read_change(mt, table: str, before: int | None) -> tuple[Counter, Counter, bool]:  # type: ignore[no-untyped-def]
    """(inserted, deleted, whether the reader read the range through Spark's changelog) as the downstream change
    reader reads ``table`` since ``before``. Only those ranges are read again by the changelog: appends are read by
    the incremental append scan, merge-on-read ranges from the data files, and the changelog refuses a range whose
    table holds delete files (a v3 merge-on-read table after a refresh's MERGE)."""
    info = mt.workspace.catalog.load(table)
    namespace, name = tuple(table.split(".")[1:-1]), table.split(".")[-1]
    change = classify(info, SourceState(namespace, name, info.uuid, before, table.split(".")[0]))
    assert change.kind is not ChangeKind.RULES_OUT, change.describe()
    if not change.changed:
        return Counter(), Counter(), False
    session = mt.workspace.spark
    inserted, deleted = _registered(session, change, table)
    if change.merge_on_read:
        # the positions read from the delete files, and the touched files' rows compared at both ends: one change
        assert change.iceberg is not None, "the change reader plans merge-on-read ranges through pyiceberg"
        compared = _registered(session, dataclasses.replace(change, iceberg=None), table)
        assert (inserted, deleted) == compared, f"{table}: the delete files' positions read another change"
    return inserted, deleted, change.kind is ChangeKind.ROW_LEVEL and not change.merge_on_read


def _registered(session, change: SourceChange, table: str) -> tuple[Counter, Counter]:  # type: ignore[no-untyped-def]
    views = register_deltas(session, [change])
    try:
        inserted = _rows(session.table(views.inserted[table]))
        deleted = _rows(session.table(views.deleted[table])) if table in views.deleted else Counter()
    finally:
        views.release()
    return inserted, deleted


def _changelog(spark, table: str, start: int, end: int) -> tuple[Counter, Counter]:  # type: ignore[no-untyped-def]
    """Spark's own reading of the range: ``create_changelog_view`` with net changes."""
    catalog, rest = table.split(".", 1)
    spark.sql(
        f"CALL {catalog}.system.create_changelog_view(table => '{rest}', options => map('start-snapshot-id', "
        f"'{start}', 'end-snapshot-id', '{end}'), net_changes => true, changelog_view => 'contract_log')"
    )
    log = spark.table("contract_log")
    data = [c for c in log.columns if not c.startswith("_")]
    inserted = _rows(log.where("_change_type IN ('INSERT', 'UPDATE_AFTER')").select(*data))
    deleted = _rows(log.where("_change_type IN ('DELETE', 'UPDATE_BEFORE')").select(*data))
    spark.catalog.dropTempView("contract_log")
    return inserted, deleted


def _pyiceberg_rows(mt, table: str, snapshot: int) -> Counter:  # type: ignore[no-untyped-def]
    iceberg = mt.workspace.catalog.catalog.load_table(tuple(table.split(".")[1:]))
    arrow = iceberg.scan(snapshot_id=snapshot).to_arrow()
    return Counter(zip(*(arrow.column(c).to_pylist() for c in arrow.column_names), strict=True))


def _check(mt, spark, table: str, before: int | None, where: str) -> None:  # type: ignore[no-untyped-def]
    """The contract for the commit(s) of ``table`` since snapshot ``before``."""
    after = mt.workspace.catalog.load(table).current_snapshot_id
    if after == before:
        return
    old = _rows(table_at(spark, table, before)) if before is not None else Counter()
    new = _rows(table_at(spark, table, after))
    inserted, deleted, by_changelog = _read_change(mt, table, before)
    assert not deleted - old, f"{where}: deleted rows the table did not hold: {dict(deleted - old)}"
    assert old - deleted + inserted == new, (
        f"{where}: before - deleted + inserted != after; inserted {dict(inserted)}, deleted {dict(deleted)}, "
        f"before {dict(old)}, after {dict(new)}"
    )
    assert _pyiceberg_rows(mt, table, after) == new, f"{where}: pyiceberg reads another table"
    if before is not None and by_changelog:
        assert _changelog(spark, table, before, after) == (inserted, deleted), f"{where}: Spark's changelog differs"


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_writers_commit_reads_back_as_exactly_its_change(spark, mt, ansi_off, layout: str) -> None:
    partitioning, properties = LAYOUTS[layout]
    spark.sql(f"CREATE TABLE src (k STRING, v BIGINT) USING iceberg TBLPROPERTIES ({properties})")
    spark.sql("INSERT INTO src VALUES ('a', 1), ('b', 2)")
    tables = []
    for writer, (mode, query) in WRITERS.items():
        for engine, option in ENGINES.items():
            if engine == "auto" and (writer in ("full", "slices") or "v3" in layout):
                continue  # Spark's alone: recomputes, and pyiceberg 0.10 writes no v3 manifests (the gate knows)
            run(
                mt,
                f"CREATE MATERIALIZED TABLE {writer}_{engine} {partitioning} WITH ({option}{properties}) "
                f"FRESHNESS = INTERVAL '1' MINUTE {mode} AS {query}",
            )
            tables.append(qualified(mt, f"{writer}_{engine}"))
    ran: set[tuple[str, str]] = set()
    compact = (
        f"CALL {tables[0].split('.')[0]}.system.rewrite_data_files(table => '{mt.workspace.default_namespace}.src', "
        "options => map('rewrite-all', 'true'))"
    )
    for change in (*CHANGES[:ROUNDS], compact):
        spark.sql(change)
        for table in tables:
            before = mt.workspace.catalog.load(table).current_snapshot_id
            outcome = refresh(mt, table.split(".")[-1])
            ran.add((outcome.strategy.split(" · ")[0], str(outcome.engine)))
            _check(mt, spark, table, before, f"{layout} {table} after {change!r} ({outcome.strategy})")
    if partitioning:  # a backfill of one partition: an overwrite of that partition by Spark
        spark.sql("INSERT INTO src VALUES ('a', 9)")
        table = qualified(mt, "full_spark")
        before = mt.workspace.catalog.load(table).current_snapshot_id
        run(mt, "ALTER MATERIALIZED TABLE full_spark REFRESH PARTITION (k = 'a')")
        _check(mt, spark, table, before, f"{layout} {table} backfill")
    if "v2-cow" in layout:  # where the in-process path may run, it did
        assert any(str(RefreshEngine.IN_PROCESS) == engine for _, engine in ran), ran
