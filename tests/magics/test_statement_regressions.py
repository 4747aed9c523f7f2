"""Regressions of the first wave's statement handling, on a real shell with the background manager."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def shell(spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql("CREATE TABLE IF NOT EXISTS mt.default.reg_orders (day STRING, amount INT) USING iceberg")
    spark.sql("INSERT INTO mt.default.reg_orders VALUES ('d1', 1), ('d1', 2), ('d2', 5)")
    yield ip
    ip.run_line_magic("unload_ext", "mt_magic")


def test_a_refused_drop_leaves_the_table_managed(shell, spark) -> None:
    """Regression: the refused DROP unregistered the table; status, REFRESH and DROP then failed."""
    shell.run_cell_magic(
        "materialized",
        "--wait",
        """
        CREATE MATERIALIZED TABLE reg_daily FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT day, sum(amount) AS total FROM reg_orders GROUP BY day;
        CREATE MATERIALIZED TABLE reg_top FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT max(total) AS top FROM reg_daily
    """,
    )
    before = shell.run_line_magic("mt", "status reg_daily").status

    with pytest.raises(UsageError, match=r"mt.default.reg_top read\(s\) it"):
        shell.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE reg_daily")

    status = shell.run_line_magic("mt", "status reg_daily").status
    assert (status.name, status.mode) == (before.name, before.mode)
    spark.sql("INSERT INTO mt.default.reg_orders VALUES ('d2', 10)")
    shell.run_cell_magic("materialized", "--wait --cascade", "ALTER MATERIALIZED TABLE reg_daily REFRESH")
    assert spark.sql("SELECT top FROM mt.default.reg_top").collect()[0][0] == 15
    shell.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE reg_top; DROP MATERIALIZED TABLE reg_daily")
    assert not spark.catalog.tableExists("mt.default.reg_daily")


def test_a_cancelled_refresh_under_wait_is_one_clean_message(shell) -> None:
    """Regression: ``--wait`` on a refresh cancelled by SUSPEND showed a traceback, not a UsageError."""
    shell.run_cell_magic(
        "materialized",
        "--wait",
        """
        CREATE MATERIALIZED TABLE reg_cancel FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT day, count(*) AS n FROM reg_orders GROUP BY day
    """,
    )
    with pytest.raises(UsageError, match=r"refresh of mt.default.reg_cancel cancelled: suspended"):
        shell.run_cell_magic(
            "materialized",
            "--wait",
            """
            ALTER MATERIALIZED TABLE reg_cancel REFRESH;
            ALTER MATERIALIZED TABLE reg_cancel SUSPEND
        """,
        )
    shell.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE reg_cancel")


def test_a_name_spark_accepts_in_backquotes_works_from_the_shell(shell, spark) -> None:
    """Regression: ``m1; DROP TABLE x`` was created, then every refresh failed (the name reached Spark and the
    catalog mangled) and was retried forever; now it refreshes, and every %mt command reads the name."""
    name = "`reg m1; DROP TABLE x`"
    shell.run_cell_magic(
        "materialized",
        "--wait",
        f"""
        CREATE MATERIALIZED TABLE {name} FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT day, count(*) AS `n; x` FROM reg_orders GROUP BY day
    """,
    )
    status = shell.run_line_magic("mt", f"status {name}").status
    assert status.name == "mt.default.reg m1; DROP TABLE x" and status.last_error is None
    assert status.last_refresh is not None
    assert shell.run_line_magic("mt", f"history {name}") is not None
    assert "reg m1; DROP TABLE x" in str(shell.run_line_magic("mt", f"explain {name}"))
    assert shell.run_line_magic("mt", f"lineage {name}") is not None
    shell.run_cell_magic("materialized", "--wait", f"ALTER MATERIALIZED TABLE {name} REFRESH")
    shell.run_cell_magic("materialized", "", f"DROP MATERIALIZED TABLE {name}")
    assert not spark.catalog.tableExists("mt.default.`reg m1; DROP TABLE x`")


def test_refused_statements_leave_the_manager_and_the_cards_as_they_were(shell) -> None:
    """With the manager's thread running: no event reaches the cards and no status changes."""
    from dataclasses import replace

    shell.run_cell_magic(
        "materialized",
        "--wait",
        """
        CREATE MATERIALIZED TABLE reg_keep FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT day, sum(amount) AS total FROM reg_orders GROUP BY day
    """,
    )
    service = shell._mt_magic_magics.connection.service
    # --wait returns when the refresh settles; its success event reaches subscribers on the manager's thread
    # just after, so wait for that delivery before listening (else this test hears the CREATE's own refresh)
    assert service.manager.wait_idle(timeout=30)

    # only this test's table: the catalog is shared, and another module's table may refresh meanwhile
    keep = "mt.default.reg_keep"

    def statuses() -> list:
        return [
            replace(s, staleness=None, next_refresh_at=None, progress=None)
            for s in service.statuses()
            if s.name == keep
        ]

    before = statuses()
    events: list = []
    unsubscribe = service.subscribe(events.append)
    try:
        for cell, message in [
            ("ALTER MATERIALIZED TABLE reg_keep REFRESH PARTITION (day = 'd1')", "not partitioned by day"),
            ("CREATE OR ALTER MATERIALIZED TABLE reg_keep AS SELECT day FROM reg_orders", "would be removed"),
            ("CREATE MATERIALIZED TABLE reg_keep AS SELECT 1 AS x", "already exists"),
            ("DROP MATERIALIZED TABLE reg_orders", "plain Iceberg table"),
            ("CREATE MATERIALIZED TABLE `reg.dot` AS SELECT 1 AS x", "contains '.'"),
        ]:
            with pytest.raises(UsageError, match=message):
                shell.run_cell_magic("materialized", "", cell)
        for line in ("refresh reg_keep --partition day='d1'", "refresh reg_keep --partition \"day = 'd1'\""):
            with pytest.raises(UsageError, match="not partitioned by day"):  # the quoted form as the help shows it
                shell.run_line_magic("mt", line)
    finally:
        unsubscribe()
    assert [e for e in events if e.table == keep and e.kind.value != "refresh-progress"] == []
    assert len(before) == 1 and statuses() == before
    shell.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE reg_keep")


def test_explain_of_a_select_says_how_a_table_defined_by_it_would_refresh(shell) -> None:
    """Regression (issue 38): ``%mt explain SELECT …`` — its help says "a table name or a statement" — failed with
    "unexpected 'day' after the table name"."""
    text = str(shell.run_line_magic("mt", "explain SELECT day, sum(amount) AS total FROM reg_orders GROUP BY day"))
    assert text.startswith("this query: CONTINUOUS"), text
    assert "mt.default.reg_orders" in text and "this_query" not in text, text
    with pytest.raises(UsageError, match=r"line 1, column"):
        shell.run_line_magic("mt", "explain SELECT day FROM reg_orders WHERE (")
