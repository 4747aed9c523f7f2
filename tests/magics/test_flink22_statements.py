"""SHOW / DESCRIBE / SHOW CREATE, SET REFRESH_MODE and RENAME TO on a real shell, with the manager running
and a downstream table reading the one that changes."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from mt_magic.sql import parse_cell
from mt_magic.sql.ddl.statements import CreateMaterializedTable, StartFrom
from mt_magic.vocabulary import RefreshMode

pytestmark = pytest.mark.spark

NS = "mt.default"


@pytest.fixture(scope="module")
def shell(spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {NS}.f22_orders (day STRING, amount INT) USING iceberg")
    spark.sql(f"INSERT INTO {NS}.f22_orders VALUES ('d1', 1), ('d1', 2), ('d2', 5)")
    ip.run_cell_magic(
        "materialized",
        "--wait",
        """
        CREATE MATERIALIZED TABLE f22_daily FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT day, sum(amount) AS total FROM f22_orders GROUP BY day;
        CREATE MATERIALIZED TABLE f22_top FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT max(total) AS top FROM f22_daily
    """,
    )
    yield ip
    ip.run_line_magic("unload_ext", "mt_magic")


def listing(shell, cell: str):  # type: ignore[no-untyped-def]
    view = shell.run_cell_magic("materialized", "", cell)
    [result] = view.results
    return result.listing


def service(shell):  # type: ignore[no-untyped-def]
    return shell._mt_magic_magics.connection.service


def test_show_describe_and_show_create(shell) -> None:
    shown = listing(shell, "SHOW MATERIALIZED TABLES FROM default LIKE 'f22\\_%'")
    assert [row[0] for row in shown.rows] == [f"{NS}.f22_daily", f"{NS}.f22_top"]
    assert shown.rows[0][1:3] == ("CONTINUOUS", "INTERVAL '1' MINUTE")
    assert listing(shell, "SHOW MATERIALIZED TABLES LIKE 'nothing%'").rows == ()

    described = listing(shell, "DESCRIBE MATERIALIZED TABLE f22_daily")
    facts = {row[0]: row[1] for row in described.rows}
    assert facts["day"] == "string" and facts["total"] == "long"
    assert facts["# sources"] == f"{NS}.f22_orders" and facts["# refresh mode"].startswith("CONTINUOUS (")

    text = listing(shell, "SHOW CREATE MATERIALIZED TABLE f22_daily").text
    [statement] = parse_cell(text)
    assert isinstance(statement, CreateMaterializedTable)
    assert str(statement.name) == f"{NS}.f22_daily" and statement.freshness.sql() == "INTERVAL '1' MINUTE"
    assert "GROUP BY" in statement.query.upper()
    assert "f22_daily" in repr(shell.run_cell_magic("materialized", "", "SHOW MATERIALIZED TABLES"))


def test_set_refresh_mode_switches_the_schedule_and_keeps_the_data_exact(shell, spark) -> None:
    shell.run_cell_magic("materialized", "", "ALTER MATERIALIZED TABLE f22_daily SET REFRESH_MODE = FULL")
    status = service(shell).status(f"{NS}.f22_daily")
    _, definition = service(shell).workspace.catalog.load_materialized(f"{NS}.f22_daily")
    assert status.mode is RefreshMode.FULL and definition.refresh_mode is RefreshMode.FULL and definition.cron
    spark.sql(f"INSERT INTO {NS}.f22_orders VALUES ('d2', 10)")
    shell.run_cell_magic("materialized", "--wait --cascade", "ALTER MATERIALIZED TABLE f22_daily REFRESH")
    assert sorted(map(tuple, spark.table(f"{NS}.f22_daily").collect())) == [("d1", 3), ("d2", 15)]
    assert spark.table(f"{NS}.f22_top").collect()[0][0] == 15

    shell.run_cell_magic("materialized", "", "ALTER MATERIALIZED TABLE f22_daily SET REFRESH_MODE = CONTINUOUS")
    assert service(shell).status(f"{NS}.f22_daily").mode is RefreshMode.CONTINUOUS
    with pytest.raises(UsageError, match="FULL"):  # a freshness no cron can express is refused, nothing changes
        shell.run_cell_magic(
            "materialized",
            "",
            """
            ALTER MATERIALIZED TABLE f22_daily SET FRESHNESS = INTERVAL '7' MINUTE;
            ALTER MATERIALIZED TABLE f22_daily SET REFRESH_MODE = FULL""",
        )
    assert service(shell).status(f"{NS}.f22_daily").mode is RefreshMode.CONTINUOUS


def test_rename_moves_the_table_and_its_readers_follow(shell, spark) -> None:
    shell.run_cell_magic("materialized", "", "ALTER MATERIALIZED TABLE f22_daily RENAME TO f22_renamed")
    svc = service(shell)
    assert not spark.catalog.tableExists(f"{NS}.f22_daily")
    names = {s.name for s in svc.statuses()}
    assert f"{NS}.f22_renamed" in names and f"{NS}.f22_daily" not in names
    _, top = svc.workspace.catalog.load_materialized(f"{NS}.f22_top")
    assert top.upstream == (f"{NS}.f22_renamed",) and "f22_renamed" in top.expanded_query
    assert f"{NS}.f22_renamed" in svc.lineage(f"{NS}.f22_top").nodes
    with pytest.raises(UsageError, match="f22_daily"):
        shell.run_line_magic("mt", "status f22_daily")

    spark.sql(f"INSERT INTO {NS}.f22_orders VALUES ('d1', 100)")
    shell.run_cell_magic("materialized", "--wait --cascade", "ALTER MATERIALIZED TABLE f22_renamed REFRESH")
    assert sorted(map(tuple, spark.table(f"{NS}.f22_renamed").collect())) == [("d1", 103), ("d2", 15)]
    assert spark.table(f"{NS}.f22_top").collect()[0][0] == 103

    with pytest.raises(UsageError, match="f22_top already exists"):
        shell.run_cell_magic("materialized", "", "ALTER MATERIALIZED TABLE f22_renamed RENAME TO f22_top")
    assert spark.catalog.tableExists(f"{NS}.f22_renamed")


TWO_HOURS = "ALTER MATERIALIZED TABLE f22_top SET FRESHNESS = INTERVAL '2' HOUR"


def test_set_freshness_moves_the_retention_policy_and_says_why_the_mode_stays(shell) -> None:
    view = shell.run_cell_magic("materialized", "", TWO_HOURS)
    info, definition = service(shell).workspace.catalog.load_materialized(f"{NS}.f22_top")
    assert info.properties["history.expire.max-snapshot-age-ms"] == str(100 * 2 * 3600 * 1000)
    # The mode was inferred from 1 minute; 2 hours would make a new table FULL, and no line may still say 1 minute.
    kept = "CONTINUOUS kept: SET FRESHNESS keeps an existing table's mode (freshness 2 hours ≥ 30 minutes threshold"
    [result] = view.results
    assert kept in result.message and "SET REFRESH_MODE = FULL changes it" in result.message
    status = service(shell).status(f"{NS}.f22_top")
    assert status.mode is RefreshMode.CONTINUOUS and definition.refresh_mode is RefreshMode.CONTINUOUS
    for reason in (definition.mode_reason, status.mode_reason, describe(shell, "f22_top")["# refresh mode"]):
        assert kept in reason and "1 minute" not in reason and "· incremental (" in reason

    shell.run_cell_magic("materialized", "", "ALTER MATERIALIZED TABLE f22_top SET FRESHNESS = INTERVAL '5' MINUTE")
    reason = service(shell).status(f"{NS}.f22_top").mode_reason
    assert reason.startswith("freshness 5 minutes < 30 minutes threshold → CONTINUOUS · incremental (")

    # A declared mode keeps its reason whatever the freshness.
    shell.run_cell_magic("materialized", "", "ALTER MATERIALIZED TABLE f22_top SET REFRESH_MODE = CONTINUOUS")
    view = shell.run_cell_magic("materialized", "", TWO_HOURS)
    [result] = view.results
    assert "kept" not in result.message
    assert service(shell).status(f"{NS}.f22_top").mode_reason.startswith("REFRESH_MODE = CONTINUOUS declared")


def describe(shell, table: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {row[0]: row[1] for row in listing(shell, f"DESCRIBE MATERIALIZED TABLE {table}").rows}


def test_distributed_by_makes_iceberg_buckets(shell, spark) -> None:
    shell.run_cell_magic(
        "materialized",
        "--wait",
        """
        CREATE MATERIALIZED TABLE f22_buckets DISTRIBUTED BY HASH(day) INTO 4 BUCKETS
        FRESHNESS = INTERVAL '1' MINUTE AS SELECT day, count(*) AS n FROM f22_orders GROUP BY day
    """,
    )
    info, definition = service(shell).workspace.catalog.load_materialized(f"{NS}.f22_buckets")
    assert info.partition_transforms == ("bucket[4]",) and definition.bucket_columns == ("day",)
    assert (
        "DISTRIBUTED BY HASH(`day`) INTO 4 BUCKETS" in listing(shell, "SHOW CREATE MATERIALIZED TABLE f22_buckets").text
    )
    spark.sql(f"INSERT INTO {NS}.f22_orders VALUES ('d3', 1)")
    shell.run_cell_magic("materialized", "--wait", "ALTER MATERIALIZED TABLE f22_buckets REFRESH")
    assert ("d3", 1) in set(map(tuple, spark.table(f"{NS}.f22_buckets").collect()))


def test_start_mode_and_converting_a_plain_table_from_the_cell_magic(shell, spark) -> None:
    doc = shell.find_cell_magic("materialized").__doc__
    assert "START_MODE = FROM_NOW" in doc and "'convert-existing-table'" in doc
    shell.run_cell_magic(
        "materialized",
        "--wait",
        "CREATE MATERIALIZED TABLE f22_since FRESHNESS = INTERVAL '1' MINUTE START_MODE = FROM_NOW "
        "AS SELECT day, amount FROM f22_orders",
    )
    assert spark.table(f"{NS}.f22_since").count() == 0
    spark.sql(f"INSERT INTO {NS}.f22_orders VALUES ('d9', 9)")
    shell.run_cell_magic("materialized", "--wait", "ALTER MATERIALIZED TABLE f22_since REFRESH")
    assert [tuple(r) for r in spark.table(f"{NS}.f22_since").collect()] == [("d9", 9)]
    [shown] = parse_cell(listing(shell, "SHOW CREATE MATERIALIZED TABLE f22_since").text)
    assert isinstance(shown, CreateMaterializedTable) and shown.start_mode is not None
    assert shown.start_mode.start is StartFrom.TIMESTAMP
    facts = {row[0]: row[1] for row in listing(shell, "DESCRIBE MATERIALIZED TABLE f22_since").rows}
    assert f"rows since the start: {NS}.f22_orders after snapshot " in facts["# start mode"]

    spark.sql(f"CREATE TABLE {NS}.f22_plain (day STRING, amount INT) USING iceberg")
    spark.sql(f"INSERT INTO {NS}.f22_plain VALUES ('old', 1)")
    convert = "CREATE OR ALTER MATERIALIZED TABLE f22_plain {with_} FRESHNESS = INTERVAL '1' MINUTE "
    convert += "START_MODE = FROM_NOW AS SELECT day, amount FROM f22_orders"
    with pytest.raises(UsageError, match=r"plain Iceberg table.*'convert-existing-table' = 'true'"):
        shell.run_cell_magic("materialized", "", convert.format(with_=""))
    assert f"{NS}.f22_plain" not in {s.name for s in service(shell).statuses()}
    shell.run_cell_magic("materialized", "--wait", convert.format(with_="WITH ('convert-existing-table' = 'true')"))
    assert [tuple(r) for r in spark.table(f"{NS}.f22_plain").collect()] == [("old", 1)]
    assert f"{NS}.f22_plain" in {s.name for s in service(shell).statuses()}
