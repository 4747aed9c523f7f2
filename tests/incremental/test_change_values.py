"""The change reader returns every value as the table stores it (issue 35, the 4.1 chain soak's seed 41).

Iceberg's ``create_changelog_view`` rebuilds each row as a Java object to remove carry-overs, which turns a STRING
holding bytes that are not UTF-8 into U+FFFD and moves a DATE or TIMESTAMP of the Julian–Gregorian gap by days,
on Spark 3.5 and 4.1 alike (the last test pins that); a table over such a source, refreshed from the change, held
values its query would not give. The change reader nets Iceberg's changelog scan inside Spark instead
(``incremental/changelog.py``). Values are compared exactly: text as its bytes, instants as epoch microseconds,
floating point as Spark's text (-0.0 and NaN included). Such text as a constant of the query is the other side of
it: Iceberg's pushed filters read it as other text, so that query recomputes (the last test).
"""

from __future__ import annotations

from collections import Counter

import pytest
from incremental_testing import COW, MOR, qualified, refresh, run

from mt_magic.catalog.definitions import SourceState
from mt_magic.runtime.refresh.incremental.changes import ChangeKind, classify
from mt_magic.runtime.refresh.incremental.delta import register_deltas
from mt_magic.runtime.refresh.incremental.reasons import FallbackReason, Strategy
from mt_magic.runtime.spark.time_travel import table_at
from mt_magic.vocabulary import HIDDEN_COLUMN_PREFIX

pytestmark = pytest.mark.spark

COLUMNS = "k INT, s STRING, d DATE, ts TIMESTAMP, tn TIMESTAMP_NTZ, x DOUBLE, st STRUCT<s: STRING, x: DOUBLE>"
EXACT = (
    "k, hex(CAST(s AS BINARY)) AS s, unix_date(d) AS d, unix_micros(ts) AS ts, CAST(tn AS STRING) AS tn, "
    "CAST(x AS STRING) AS x, hex(CAST(st.s AS BINARY)) AS sts, CAST(st.x AS STRING) AS stx"
)
ODD = (
    "(1, CAST(unhex('FF') AS STRING), DATE '1582-10-10', TIMESTAMP '1582-10-10 12:00:00', "
    "TIMESTAMP_NTZ '1582-10-07 00:00:00', CAST('-0.0' AS DOUBLE), named_struct('s', CAST(unhex('C328') AS STRING), "
    "'x', CAST('-0.0' AS DOUBLE)))"
)
ROWS = (
    ODD,
    ODD,  # a duplicate
    "(2, 'é', DATE '0001-01-01', TIMESTAMP '0001-01-01 00:00:00', TIMESTAMP_NTZ '9999-12-31 23:59:59.999999', "
    "double('NaN'), named_struct('s', 'a', 'x', 0.0))",
    "(3, NULL, NULL, NULL, NULL, 0.0, NULL)",
    "(4, CAST(unhex('FE') AS STRING), DATE '1582-10-14', TIMESTAMP '1582-10-05 00:00:00', NULL, 1.5, NULL)",
)
CHANGES = (  # two snapshots read as one range: a row changed twice, carry-overs, a duplicate deleted
    "UPDATE src SET k = k + 10 WHERE k IN (1, 2)",
    "DELETE FROM src WHERE k = 4",
    "UPDATE src SET k = k + 10 WHERE k = 12",
)


def _exact(frame) -> Counter:  # type: ignore[no-untyped-def]
    return Counter(tuple(row) for row in frame.selectExpr(*EXACT.split(", ")).collect())


def _source(spark, properties: str, extra: str = "") -> None:  # type: ignore[no-untyped-def]
    spark.sql(f"CREATE TABLE src ({COLUMNS}{extra}) USING iceberg {properties}")
    fill = ", map(CAST(unhex('FF') AS STRING), 1)" if extra else ""
    spark.sql(f"INSERT INTO src VALUES {', '.join(row[:-1] + fill + ')' for row in ROWS)}")


def _read(mt, table: str, before: int) -> tuple[Counter, Counter]:  # type: ignore[no-untyped-def]
    """(inserted, deleted) as the change reader reads the range."""
    info = mt.workspace.catalog.load(table)
    namespace, name = tuple(table.split(".")[1:-1]), table.split(".")[-1]
    change = classify(info, SourceState(namespace, name, info.uuid, before, table.split(".")[0]))
    assert change.kind is ChangeKind.ROW_LEVEL, change.describe()
    spark = mt.workspace.spark
    views = register_deltas(spark, [change])
    try:
        return _exact(spark.table(views.inserted[table])), _exact(spark.table(views.deleted[table]))
    finally:
        views.release()


@pytest.mark.parametrize("layout", ["copy-on-write", "copy-on-write with a map", "merge-on-read"])
def test_the_change_reader_returns_every_value_as_stored(spark, mt, layout: str) -> None:
    _source(spark, MOR if layout == "merge-on-read" else COW, ", m MAP<STRING, INT>" if "map" in layout else "")
    table = qualified(mt, "src")
    before = mt.workspace.catalog.load(table).current_snapshot_id
    for change in CHANGES:
        spark.sql(change)
    after = mt.workspace.catalog.load(table).current_snapshot_id
    old, new = _exact(table_at(spark, table, before)), _exact(table_at(spark, table, after))
    inserted, deleted = _read(mt, table, before)
    assert not deleted - old, f"deleted rows the table did not hold: {dict(deleted - old)}"
    assert old - deleted + inserted == new, f"inserted {dict(inserted)}, deleted {dict(deleted)}"
    if layout == "copy-on-write":  # netted: exactly the change, no carry-over (a map's positions keep them)
        assert (inserted, deleted) == (new - old, old - new)


def test_a_table_on_a_table_holds_its_querys_values_after_a_row_level_change(spark, mt) -> None:
    _source(spark, COW)
    run(mt, "CREATE MATERIALIZED TABLE down FRESHNESS = INTERVAL '1' MINUTE AS SELECT * FROM src WHERE k > 0")
    for change in CHANGES:
        spark.sql(change)
        outcome = refresh(mt, "down")
        assert Strategy.APPLY_CHANGES.label in outcome.strategy, outcome.strategy
        stored = spark.table(qualified(mt, "down"))
        stored = stored.select(*(c for c in stored.columns if not c.startswith(HIDDEN_COLUMN_PREFIX)))
        assert _exact(stored) == _exact(spark.table(qualified(mt, "src"))), f"after {change!r}"


def test_iceberg_changelog_view_rebuilds_values_which_is_why_the_change_reader_nets_the_scan_itself(spark, mt) -> None:
    """Pins the installed Iceberg runtime's behaviour behind ``incremental/changelog.py``: when this starts failing,
    ``create_changelog_view`` returns stored values and could read copy-on-write ranges again."""
    _source(spark, COW)
    table = qualified(mt, "src")
    before = mt.workspace.catalog.load(table).current_snapshot_id
    spark.sql(CHANGES[0])
    after = mt.workspace.catalog.load(table).current_snapshot_id
    catalog, inside = table.split(".", 1)
    spark.sql(
        f"CALL {catalog}.system.create_changelog_view(table => '{inside}', options => map('start-snapshot-id', "
        f"'{before}', 'end-snapshot-id', '{after}'), net_changes => true, changelog_view => 'values_log')"
    )
    try:
        inserted = _exact(spark.table("values_log").where("_change_type = 'INSERT'"))
    finally:  # the session is shared: a leftover temp view shows up in other tests' SHOW VIEWS
        spark.catalog.dropTempView("values_log")
    stored = _exact(spark.table(qualified(mt, "src")).where("k > 10"))
    assert sum(stored.values()) == sum(inserted.values()) == 3
    assert inserted != stored
    rebuilt = {row[1] for row in inserted}
    assert rebuilt == {"EFBFBD", "C3A9"}, rebuilt  # 'FF' came back as U+FFFD


def test_a_filter_on_text_that_is_not_utf8_recomputes_to_sparks_answer(spark, mt) -> None:
    """The fuzzer's seed 7 chain case ``b0_c2_10`` (4.1.4): Iceberg's filter pushdown reads the constant of
    ``s >= CAST(unhex('C328') AS STRING)`` as text (U+FFFD, then '(') and skips the files whose bounds lie below it,
    so Spark's answer over the table leaves out '日本', whose bytes Spark's own comparison puts above C3 28. An
    incremental refresh applied the rows of the change, which came to the filter from elsewhere (Spark compared
    them itself), and the table kept '日本'. Spark's answer depends on the plan, so the query recomputes."""
    spark.sql(f"CREATE TABLE txt (k INT, s STRING) USING iceberg {COW}")
    spark.sql("INSERT INTO txt VALUES (1, '日本'), (2, 'a')")
    where = "s >= CAST(unhex('C328') AS STRING)"
    exact = spark.table(qualified(mt, "txt")).localCheckpoint().where(where)
    assert [row.s for row in exact.collect()] == ["日本"]  # Spark's own comparison, over rows no scan filtered
    run(mt, f"CREATE MATERIALIZED TABLE picked FRESHNESS = INTERVAL '1' MINUTE AS SELECT k, s FROM txt WHERE {where}")
    spark.sql("UPDATE txt SET k = k + 10")
    outcome = refresh(mt, "picked")
    assert FallbackReason.TEXT_NOT_UTF8.sentence in outcome.strategy, outcome.strategy
    answer = spark.sql(f"SELECT k, s FROM txt WHERE {where}").collect()
    assert spark.table(qualified(mt, "picked")).collect() == answer == []  # Iceberg skipped the file of '日本'
