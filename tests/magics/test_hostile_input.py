"""A corpus of malformed and hostile input through ``%%materialized`` and ``%mt`` on a real shell with the
manager's thread: each gets one clean ``UsageError``, and afterwards every namespace of the catalog, the
manager's tables and the cards (events) are exactly as before."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from traitlets import TraitError

from mt_magic.runtime.status import RefreshEvent

pytestmark = pytest.mark.spark

NS = "mt.default"
HUGE = "SELECT " + " + ".join(["1"] * 20_000) + " AS x"

CELLS = [
    # syntax
    "CREATE MATERIALIZED TABLE",
    "CREATE MATERIALIZED TABLE h1",
    "CREATE MATERIALIZED TABLE h1 AS",
    "CREATE MATERIALIZED TABLE h1 FRESHNESS = AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 FRESHNESS = INTERVAL '0' SECOND AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 FRESHNESS = INTERVAL '1' MONTH AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 FRESHNESS = INTERVAL 'x' MINUTE AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 FRESHNESS = INTERVAL '7' MINUTE REFRESH_MODE = FULL AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 REFRESH_MODE = SOMETIMES AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 WITH ('a' = ) AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 WITH ('a' = 'b', 'a' = 'c') AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 PARTITIONED BY (days(ts)) AS SELECT current_timestamp() AS ts",
    "CREATE MATERIALIZED TABLE h1 (a INT, b INT) AS SELECT 1 AS a",
    "CREATE MATERIALIZED TABLE h1 AS SELECT 1 AS x; garbage",
    "CREATE MATERIALIZED TABLE h1 AS SELECT (1 AS x",
    "CREATE OR REPLACE MATERIALIZED TABLE h1 AS SELECT 1 AS x",
    "CREATE TABLE h1 (x INT)",
    "DROP TABLE reg_src",
    "SELECT * FROM reg_src",
    "ALTER MATERIALIZED TABLE hostile_t PAUSE",
    "ALTER MATERIALIZED TABLE hostile_t SET OWNER = 'x'",
    "ALTER MATERIALIZED TABLE hostile_t REFRESH PARTITION (day = )",
    "ALTER MATERIALIZED TABLE hostile_t RESUME WITH ('merge-engine' = 'aggregation')",
    "/* unterminated comment CREATE MATERIALIZED TABLE h1 AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 AS SELECT 'unterminated FROM reg_src",
    # unknown things, temp views, types
    "CREATE MATERIALIZED TABLE h1 AS SELECT * FROM no_such_source",
    "CREATE MATERIALIZED TABLE h1 AS SELECT no_such_column FROM reg_src",
    "CREATE MATERIALIZED TABLE h1 AS SELECT * FROM hostile_view",
    "CREATE MATERIALIZED TABLE h1 (day ARRAY<INT>) AS SELECT day FROM reg_src",
    "CREATE MATERIALIZED TABLE h1 AS SELECT NULL AS nothing FROM reg_src",
    "CREATE MATERIALIZED TABLE h1 PARTITIONED BY (nope) AS SELECT day FROM reg_src",
    "CREATE MATERIALIZED TABLE h1 (PRIMARY KEY (nope) NOT ENFORCED) AS SELECT day FROM reg_src",
    "CREATE MATERIALIZED TABLE h1 WITH ('partition.fields.day.date-formatter' = 'yyyyMMdd') AS SELECT day FROM reg_src",
    "CREATE MATERIALIZED TABLE h1 WITH ('incremental' = 'strict') AS SELECT day, rank() OVER (ORDER BY day) AS r "
    "FROM reg_src",
    "CREATE MATERIALIZED TABLE other_catalog.db.h1 AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE hostile_t AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE reg_src AS SELECT 1 AS x",
    "ALTER MATERIALIZED TABLE no_such_table SUSPEND",
    "ALTER MATERIALIZED TABLE reg_src REFRESH",
    "ALTER MATERIALIZED TABLE hostile_t AS SELECT day FROM reg_src",
    "ALTER MATERIALIZED TABLE hostile_t REFRESH PARTITION (day = 'd1')",
    "ALTER MATERIALIZED TABLE hostile_t RENAME TO reg_src",
    "DROP MATERIALIZED TABLE no_such_table",
    "DROP MATERIALIZED TABLE reg_src",
    "DESCRIBE MATERIALIZED TABLE no_such_table",
    "SHOW CREATE MATERIALIZED TABLE reg_src",
    # injection attempts in names and options, odd characters
    "CREATE MATERIALIZED TABLE `h1`; DROP TABLE reg_src; -- ` AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE `a.b` AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE `50%` AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE `a/b` AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 WITH ('merge-engine' = 'aggregation') AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 WITH ('connector' = 'kafka') AS SELECT 1 AS x",
    "CREATE MATERIALIZED TABLE h1 WITH ('write.data.path' = 'file:///etc') AS SELECT day FROM reg_src",
    "CREATE MATERIALIZED TABLE h1 AS SELECT day FROM reg_src WHERE day = ''; DROP TABLE reg_src; --'",
    # huge
    "CREATE MATERIALIZED TABLE h1 FRESHNESS = INTERVAL '99999999999999999999' SECOND AS SELECT 1 AS x",
    "-- " + "x" * 1_000_000,
]

LINES = [
    "status no_such_table",
    "history no_such_table",
    "lineage no_such_table",
    "explain no_such_table",
    "refresh reg_src",
    "refresh hostile_t --partition nope",
    "suspend",
    "frobnicate",
    "explain CREATE MATERIALIZED TABLE x FRESHNESS = INTERVAL '1' MONTH AS SELECT 1 AS x",
]


@pytest.fixture(scope="module")
def shell(spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {NS}.reg_src (day STRING, amount INT) USING iceberg")
    spark.sql(f"INSERT INTO {NS}.reg_src VALUES ('d1', 1)")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW hostile_view AS SELECT * FROM {NS}.reg_src")
    ip.run_cell_magic(
        "materialized",
        "--wait",
        "CREATE MATERIALIZED TABLE hostile_t FRESHNESS = INTERVAL '1' HOUR AS SELECT day, sum(amount) AS s "
        "FROM reg_src GROUP BY day",
    )
    ip.run_cell_magic("materialized", "", "ALTER MATERIALIZED TABLE hostile_t SUSPEND")
    # SUSPEND's own event is delivered by the manager's thread; it must not land among the corpus's events
    assert ip._mt_magic_magics.connection.service.manager.wait_idle(timeout=60)
    yield ip
    ip.run_line_magic("unload_ext", "mt_magic")


def _everything(shell) -> tuple:  # type: ignore[no-untyped-def]
    """Every table of every namespace (properties, snapshot, columns) and the manager's tables and states."""
    service = shell._mt_magic_magics.connection.service
    catalog = service.workspace.catalog
    tables = {}
    for ns in sorted(catalog.catalog.list_namespaces()):
        for ident in sorted(catalog.catalog.list_tables(ns)):
            if ident[0] == "mt_magic":  # the refresh-lease map changes as leases are renewed
                continue
            info = catalog.load(".".join((catalog.spark_name, *ident)))
            tables[ident] = (dict(info.properties), info.current_snapshot_id, info.columns)
    statuses = [
        (
            s.name,
            s.mode,
            s.freshness,
            s.state,
            s.last_refresh.snapshot_id if s.last_refresh else None,
            s.last_error,
            s.consecutive_failures,
        )
        for s in service.statuses()
    ]
    return tables, statuses


def test_the_corpus_is_refused_cleanly_and_changes_nothing(shell) -> None:
    assert len(CELLS) + len(LINES) >= 50
    service = shell._mt_magic_magics.connection.service
    events: list[RefreshEvent] = []
    unsubscribe = service.subscribe(events.append)
    before = _everything(shell)
    accepted = []
    try:
        for cell in CELLS:
            try:
                shell.run_cell_magic("materialized", "", cell)
                accepted.append(cell[:80])
            except UsageError as exc:
                assert str(exc).strip(), cell[:80]
                assert "Traceback" not in str(exc)
        for line in LINES:
            try:
                shell.run_line_magic("mt", line)
                accepted.append(f"%mt {line}")
            except UsageError as exc:
                assert str(exc).strip(), line
    finally:
        unsubscribe()
    assert accepted == []
    assert _everything(shell) == before
    lease_news = "refreshed by"  # the lease pass reports who refreshes a table; no statement caused those
    caused = [e for e in events if e.table.endswith("hostile_t") and not e.message.startswith(lease_news)]
    assert caused == []


def test_huge_previews_are_refused_or_bounded(shell) -> None:
    with pytest.raises(TraitError, match="preview_rows must be at least 1"):
        shell._mt_magic_magics.preview_rows = 0
    shell.run_line_magic("config", "MaterializedMagics.preview_rows = 10000000")
    try:
        card = shell.run_line_magic("mt", "status hostile_t")
        preview = shell._mt_magic_magics.connection.service.preview(f"{NS}.hostile_t", 10_000_000)
        assert len(preview.rows) == 1 and card.status.name == f"{NS}.hostile_t"
    finally:
        shell.run_line_magic("config", "MaterializedMagics.preview_rows = 100")
