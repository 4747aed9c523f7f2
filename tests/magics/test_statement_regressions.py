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
    shell.run_cell_magic("materialized", "--wait", """
        CREATE MATERIALIZED TABLE reg_daily FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT day, sum(amount) AS total FROM reg_orders GROUP BY day;
        CREATE MATERIALIZED TABLE reg_top FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT max(total) AS top FROM reg_daily
    """)
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
    shell.run_cell_magic("materialized", "--wait", """
        CREATE MATERIALIZED TABLE reg_cancel FRESHNESS = INTERVAL '1' MINUTE
        AS SELECT day, count(*) AS n FROM reg_orders GROUP BY day
    """)
    with pytest.raises(UsageError, match=r"refresh of mt.default.reg_cancel cancelled: suspended"):
        shell.run_cell_magic("materialized", "--wait", """
            ALTER MATERIALIZED TABLE reg_cancel REFRESH;
            ALTER MATERIALIZED TABLE reg_cancel SUSPEND
        """)
    shell.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE reg_cancel")
