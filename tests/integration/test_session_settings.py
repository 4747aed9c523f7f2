"""The defining session's SQL semantics belong to the definition: recorded at CREATE / ALTER … AS / CREATE OR ALTER,
applied to every refresh (first, incremental, full, backfill), shown by SHOW CREATE and DESCRIBE.

On real Spark and the real REST catalog. The notebook's session is ``spark``; every test puts back what it set.
Refreshes are pinned to Spark (``'incremental.engine' = 'spark'``): the in-process engine decides from
``sql_settings`` on its own (tested with it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone

import pytest
from mt_testing import run
from notebook_settings import session_settings

from mt_magic.errors import DefinitionError
from mt_magic.runtime.refresh.run import run_refresh
from mt_magic.runtime.spark.semantics import ANSWER_SETTINGS
from mt_magic.runtime.status import RefreshRequest
from mt_magic.vocabulary import JobState, RefreshKind, RefreshTrigger

pytestmark = pytest.mark.spark

TZ = "spark.sql.session.timeZone"
ANSI = "spark.sql.ansi.enabled"
LA = "America/Los_Angeles"
SPARK_ONLY = "'incremental.engine' = 'spark'"
HOUR = 3_600_000_000
MARCH_10 = 1_710_028_800_000_000
"""2024-03-10 00:00:00 UTC in microseconds; Los Angeles springs forward at 10:00 UTC that day."""
TZ_QUERY = "SELECT id, ts, date_format(ts, 'yyyy-MM-dd') AS day FROM ev WHERE ts > '2024-03-10 02:30:00'"


@pytest.fixture
def notebook(spark) -> Iterator:
    """The notebook's session; whatever a test sets in it is put back (the session is shared by every test)."""
    keys = (TZ, ANSI)
    before = {key: spark.conf.get(key) for key in keys}
    yield spark
    for key, value in before.items():
        spark.conf.set(key, value)


def qualified(mt, table: str) -> str:
    return f"{mt.workspace.catalog.spark_name}.{mt.workspace.default_namespace}.{table}"


def table_rows(spark, mt, table: str, columns: str = "*") -> Counter:
    return Counter(tuple(r) for r in spark.sql(f"SELECT {columns} FROM {qualified(mt, table)}").collect())


def answer(spark, query: str, settings: Mapping[str, str], columns: str = "*") -> Counter:
    """What ``spark.sql(query)`` answers in the notebook's session with ``settings``."""
    with session_settings(spark, settings):
        return Counter(tuple(r) for r in spark.sql(f"SELECT {columns} FROM ({query})").collect())


def settings_of(mt, table: str) -> Mapping[str, str] | None:
    return mt.workspace.catalog.load_materialized(qualified(mt, table))[1].sql_settings


def refresh(mt, table: str, force_full: bool = False, partition: tuple = ()):
    request = RefreshRequest(qualified(mt, table), RefreshTrigger.MANUAL, datetime.now(timezone.utc), partition)
    if force_full:
        return run_refresh(mt.engine.context, request, force_full=True)
    return mt.engine.refresh(request)


def add_events(spark, first: int, count: int) -> None:
    """Hourly events from 2024-03-10 00:00 UTC + ``first`` hours, written as instants (no session time zone)."""
    values = ", ".join(f"({i}, timestamp_micros({MARCH_10 + i * HOUR}))" for i in range(first, first + count))
    spark.sql(f"INSERT INTO ev SELECT * FROM VALUES {values} AS v(id, ts)")


TZ_COLUMNS = "id, unix_micros(ts) AS us, day"


def test_a_table_defined_in_los_angeles_holds_the_los_angeles_answer_on_every_refresh(mt, notebook) -> None:
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 24)
    spark.conf.set(TZ, LA)
    la_answer = answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)
    assert sum(la_answer.values()) == 13  # 02:30 on March 10 does not exist in LA: 03:30 PDT, 10:30 UTC
    assert answer(spark, TZ_QUERY, {TZ: "UTC"}, TZ_COLUMNS) != la_answer  # the case is real
    run(
        mt,
        f"CREATE MATERIALIZED TABLE tz_mt PARTITIONED BY (day) WITH ({SPARK_ONLY}) "
        f"FRESHNESS = INTERVAL '1' MINUTE AS {TZ_QUERY}",
    )
    assert table_rows(spark, mt, "tz_mt", TZ_COLUMNS) == la_answer  # from CREATE on
    assert settings_of(mt, "tz_mt")[TZ] == LA

    spark.conf.set(TZ, "UTC")  # the notebook moves on; the table keeps its definition's answer
    add_events(spark, 24, 12)
    outcome = refresh(mt, "tz_mt")
    assert outcome.kind is RefreshKind.INCREMENTAL, outcome.strategy
    assert table_rows(spark, mt, "tz_mt", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)

    add_events(spark, 36, 3)
    outcome = refresh(mt, "tz_mt", force_full=True)
    assert outcome.kind is RefreshKind.FULL
    assert table_rows(spark, mt, "tz_mt", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)

    spark.sql(f"DELETE FROM ev WHERE id = {12}")  # a day partition changes; the backfill recomputes it
    outcome = refresh(mt, "tz_mt", partition=(("day", "2024-03-10"),))
    assert outcome.kind is RefreshKind.PARTITION
    assert table_rows(spark, mt, "tz_mt", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)


SIZE_QUERY = "SELECT k, size(arr) AS n FROM arrays"


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_ansi_mode_of_the_defining_session_holds_after_the_notebook_changes_it(mt, notebook, ansi: str) -> None:
    spark = notebook
    other = "false" if ansi == "true" else "true"
    spark.sql("CREATE TABLE arrays (k INT, arr ARRAY<INT>, v INT) USING iceberg")
    spark.sql("INSERT INTO arrays VALUES (1, NULL, 7), (2, array(1, 2), 70000)")
    spark.conf.set(ANSI, ansi)
    # size(NULL) is -1 with ANSI off and NULL with it on; an INT past SMALLINT wraps with it off and fails with it on.
    query = SIZE_QUERY if ansi == "true" else "SELECT k, size(arr) AS n, CAST(v AS SMALLINT) AS s FROM arrays"
    defined = answer(spark, query, {ANSI: ansi})
    assert (1, None) in defined if ansi == "true" else (1, -1, 7) in defined and (2, 2, 4464) in defined
    run(mt, f"CREATE MATERIALIZED TABLE sizes WITH ({SPARK_ONLY}) FRESHNESS = INTERVAL '1' MINUTE AS {query}")
    assert table_rows(spark, mt, "sizes") == defined
    assert settings_of(mt, "sizes")[ANSI] == ansi

    spark.conf.set(ANSI, other)
    spark.sql("INSERT INTO arrays VALUES (3, NULL, 8), (4, array(5), 8)")
    outcome = refresh(mt, "sizes")
    assert outcome.kind is RefreshKind.INCREMENTAL, outcome.strategy
    assert table_rows(spark, mt, "sizes") == answer(spark, query, {ANSI: ansi})
    refresh(mt, "sizes", force_full=True)
    assert table_rows(spark, mt, "sizes") == answer(spark, query, {ANSI: ansi})


def test_tables_of_different_time_zones_on_one_worker_thread_never_see_each_others(mt, notebook) -> None:
    """The inline manager refreshes on this thread: its one reused child session runs all three tables."""
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 24)
    zones = {"in_la": LA, "in_tokyo": "Asia/Tokyo", "before_settings": "UTC"}
    for table, zone in zones.items():
        spark.conf.set(TZ, zone)
        run(mt, f"CREATE MATERIALIZED TABLE {table} WITH ({SPARK_ONLY}) FRESHNESS = INTERVAL '1' MINUTE AS {TZ_QUERY}")
    spark.sql(f"ALTER TABLE {qualified(mt, 'before_settings')} UNSET TBLPROPERTIES ('mt.sql-settings')")
    assert settings_of(mt, "before_settings") is None
    product_zone = mt.engine.jobs.child_session().conf.get(TZ)  # what a table without settings refreshes with
    expected = {table: {TZ: zone} for table, zone in zones.items()} | {"before_settings": {TZ: product_zone}}
    session = mt.engine.jobs.child_session()
    spark.conf.set(TZ, "Pacific/Auckland")
    for batch, order in enumerate((["in_la", "in_tokyo", "before_settings"], ["before_settings", "in_la", "in_tokyo"])):
        add_events(spark, 24 + 3 * batch, 3)
        for table in order:
            refresh(mt, table, force_full=batch == 1)
            assert table_rows(spark, mt, table, TZ_COLUMNS) == answer(spark, TZ_QUERY, expected[table], TZ_COLUMNS)
    assert mt.engine.jobs.child_session() is session  # one session did it all
    assert session.conf.get(TZ) == product_zone  # and nothing of the last table stays in it


def test_show_create_and_describe_show_the_settings_and_show_create_recreates_the_same_table(mt, notebook) -> None:
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 24)
    spark.conf.set(TZ, LA)
    run(mt, f"CREATE MATERIALIZED TABLE shown WITH ({SPARK_ONLY}) FRESHNESS = INTERVAL '1' MINUTE AS {TZ_QUERY}")
    recorded = dict(settings_of(mt, "shown"))
    assert set(recorded) <= set(ANSWER_SETTINGS) and {TZ, ANSI, "spark.sql.storeAssignmentPolicy"} <= set(recorded)
    before = table_rows(spark, mt, "shown", TZ_COLUMNS)

    text = run(mt, "SHOW CREATE MATERIALIZED TABLE shown")[0].listing.text
    # Readable: the settings equal to this Spark's defaults are one baseline; only the time zone differs from it.
    with_block = text.split("WITH (\n")[1].split("\n)")[0]
    assert with_block.splitlines() == [
        "  'incremental.engine' = 'spark',",
        f"  'sql-settings.baseline' = 'spark-{spark.version}',",
        f"  '{TZ}' = '{LA}'",
    ]
    described = {row[0]: row[1] for row in run(mt, "DESCRIBE MATERIALIZED TABLE shown")[0].listing.rows}
    assert described["# SQL settings"].startswith("of the defining session")
    assert described[f"#   {TZ}"] == LA and described[f"#   {ANSI}"] == spark.conf.get(ANSI)

    run(mt, "DROP MATERIALIZED TABLE shown")
    spark.conf.set(TZ, "Asia/Tokyo")  # a fresh session elsewhere: the statement carries the settings
    run(mt, text)
    assert dict(settings_of(mt, "shown")) == recorded
    assert table_rows(spark, mt, "shown", TZ_COLUMNS) == before


def test_a_table_without_recorded_settings_keeps_the_products_settings_and_says_so(mt, notebook) -> None:
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 24)
    spark.conf.set(TZ, LA)
    run(mt, f"CREATE MATERIALIZED TABLE old_mt WITH ({SPARK_ONLY}) FRESHNESS = INTERVAL '1' MINUTE AS {TZ_QUERY}")
    spark.sql(f"ALTER TABLE {qualified(mt, 'old_mt')} UNSET TBLPROPERTIES ('mt.sql-settings')")
    described = {row[0]: row[1] for row in run(mt, "DESCRIBE MATERIALIZED TABLE old_mt")[0].listing.rows}
    assert described["# SQL settings"].startswith("not recorded: refreshes run with the product's settings")
    assert "spark.sql" not in run(mt, "SHOW CREATE MATERIALIZED TABLE old_mt")[0].listing.text
    refresh(mt, "old_mt", force_full=True)
    product_zone = mt.engine.jobs.child_session().conf.get(TZ)
    assert table_rows(spark, mt, "old_mt", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: product_zone}, TZ_COLUMNS)
    run(mt, "ALTER MATERIALIZED TABLE old_mt SET FRESHNESS = INTERVAL '2' MINUTE")
    assert settings_of(mt, "old_mt") is None  # kept as it was: nothing records settings but a new definition


def test_alter_as_and_create_or_alter_record_the_session_running_them(mt, notebook) -> None:
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 24)
    spark.conf.set(TZ, "UTC")
    run(mt, f"CREATE MATERIALIZED TABLE moved WITH ({SPARK_ONLY}) FRESHNESS = INTERVAL '1' MINUTE AS {TZ_QUERY}")
    spark.conf.set(TZ, LA)
    run(mt, f"ALTER MATERIALIZED TABLE moved AS {TZ_QUERY}")
    spark.conf.set(TZ, "UTC")
    refresh(mt, "moved")
    assert table_rows(spark, mt, "moved", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)
    run(mt, "ALTER MATERIALIZED TABLE moved SUSPEND")
    run(mt, "ALTER MATERIALIZED TABLE moved RESUME")
    run(mt, "ALTER MATERIALIZED TABLE moved SET FRESHNESS = INTERVAL '2' MINUTE")
    run(mt, "ALTER MATERIALIZED TABLE moved RENAME TO moved2")
    assert settings_of(mt, "moved2")[TZ] == LA  # statements that keep the query keep its semantics
    refresh(mt, "moved2", force_full=True)
    assert table_rows(spark, mt, "moved2", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)

    run(mt, f"CREATE OR ALTER MATERIALIZED TABLE moved2 WITH ('{TZ}' = 'Asia/Tokyo') AS {TZ_QUERY}")
    refresh(mt, "moved2")
    assert table_rows(spark, mt, "moved2", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: "Asia/Tokyo"}, TZ_COLUMNS)
    assert settings_of(mt, "moved2")[TZ] == "Asia/Tokyo" and spark.conf.get(TZ) == "UTC"


def test_converting_a_plain_table_records_the_session_running_it(mt, notebook) -> None:
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 24)
    spark.sql("CREATE TABLE plain (id INT, ts TIMESTAMP, day STRING) USING iceberg")
    spark.conf.set(TZ, LA)
    run(
        mt,
        "CREATE OR ALTER MATERIALIZED TABLE plain WITH ('convert-existing-table' = 'true', "
        f"{SPARK_ONLY}) FRESHNESS = INTERVAL '1' MINUTE AS {TZ_QUERY}",
    )
    spark.conf.set(TZ, "UTC")
    assert table_rows(spark, mt, "plain", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)
    assert settings_of(mt, "plain")[TZ] == LA


def test_a_resume_option_that_would_change_a_recorded_setting_is_refused_and_changes_nothing(mt, notebook) -> None:
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 24)
    spark.conf.set(TZ, LA)
    run(mt, f"CREATE MATERIALIZED TABLE held WITH ({SPARK_ONLY}) FRESHNESS = INTERVAL '1' MINUTE AS {TZ_QUERY}")
    run(mt, "ALTER MATERIALIZED TABLE held SUSPEND")
    name = qualified(mt, "held")
    properties = mt.workspace.catalog.load(name).properties
    with pytest.raises(DefinitionError, match=r"'spark\.sql\.session\.timeZone' = 'UTC' \(the definition says "):
        run(mt, f"ALTER MATERIALIZED TABLE held RESUME WITH ('{TZ}' = 'UTC')")
    assert mt.workspace.catalog.load(name).properties == properties
    assert mt.status(name).state is JobState.SUSPENDED
    run(mt, f"ALTER MATERIALIZED TABLE held RESUME WITH ('{TZ}' = '{LA}', 'spark.sql.shuffle.partitions' = '3')")
    add_events(spark, 24, 5)
    refresh(mt, "held")
    assert table_rows(spark, mt, "held", TZ_COLUMNS) == answer(spark, TZ_QUERY, {TZ: LA}, TZ_COLUMNS)


def test_a_with_setting_that_is_not_an_answer_setting_or_not_a_value_spark_accepts_is_refused(mt, notebook) -> None:
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    before = spark.conf.get(TZ)
    for option, problem in (
        ("'spark.sql.shuffle.partitions' = '4'", "is not a Spark setting that changes a query's answer"),
        (f"'{TZ}' = 'Mars/Olympus_Mons'", "Spark refuses the value"),
    ):
        with pytest.raises(DefinitionError, match=problem):
            run(mt, f"CREATE MATERIALIZED TABLE refused WITH ({option}) AS {TZ_QUERY}")
        assert not mt.workspace.catalog.exists(qualified(mt, "refused"))
        assert spark.conf.get(TZ) == before


def test_the_statement_is_analysed_under_the_settings_its_refreshes_run_with(mt, notebook) -> None:
    """A pinned TIMESTAMP_NTZ makes the literal's column timestamp_ntz: the schema is the one refreshes produce."""
    spark = notebook
    spark.sql("CREATE TABLE ev (id INT, ts TIMESTAMP) USING iceberg")
    add_events(spark, 0, 3)
    before = spark.conf.get("spark.sql.timestampType")
    run(
        mt,
        "CREATE MATERIALIZED TABLE ntz WITH ('spark.sql.timestampType' = 'TIMESTAMP_NTZ') "
        "AS SELECT id, TIMESTAMP '2024-03-10 02:30:00' AS t FROM ev",
    )
    assert spark.table(qualified(mt, "ntz")).schema["t"].dataType.simpleString() == "timestamp_ntz"
    assert spark.conf.get("spark.sql.timestampType") == before == "TIMESTAMP_LTZ"  # the notebook's, as it was
    assert table_rows(spark, mt, "ntz", "id, CAST(t AS STRING)") == Counter(
        {(i, "2024-03-10 02:30:00"): 1 for i in range(3)}
    )
