"""The user surface on a real IPython shell: %load_ext, %%materialized, %mt, %unload_ext — embedded defaults.

No catalog is configured here (MT_MAGIC_HOME is a temp dir), so loading the extension starts the embedded
REST catalog server, exactly as a first-time user gets it.
"""

from __future__ import annotations

import threading

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def shell(spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql("CREATE TABLE IF NOT EXISTS mt.default.clicks (page STRING, user_id INT) USING iceberg")
    spark.sql("INSERT INTO mt.default.clicks VALUES ('home', 1), ('home', 2), ('cart', 1)")
    yield ip
    ip.run_line_magic("unload_ext", "mt_magic")


def test_create_returns_at_once_and_the_table_fills(shell, spark) -> None:
    view = shell.run_cell_magic(
        "materialized",
        "--wait",
        """
        -- page views per page, kept within 2 minutes
        CREATE MATERIALIZED TABLE page_views FRESHNESS = INTERVAL '2' MINUTE
        AS SELECT page, count(*) AS views FROM clicks GROUP BY page
    """,
    )
    assert "Created mt.default.page_views (CONTINUOUS, INTERVAL '2' MINUTE)" in repr(view)
    assert sorted(map(tuple, spark.sql("SELECT * FROM mt.default.page_views").collect())) == [("cart", 1), ("home", 2)]


def test_statement_errors_are_one_clean_usage_error(shell) -> None:
    with pytest.raises(UsageError, match=r"FRESHNESS.*MONTH"):
        shell.run_cell_magic(
            "materialized", "", "CREATE MATERIALIZED TABLE x FRESHNESS = INTERVAL '1' MONTH AS SELECT 1 AS one"
        )
    with pytest.raises(UsageError, match=r"no_such_source does not exist"):
        shell.run_cell_magic("materialized", "", "CREATE MATERIALIZED TABLE y AS SELECT * FROM no_such_source")


def test_help_shows_a_working_example(shell) -> None:
    doc = shell.find_cell_magic("materialized").__doc__
    assert "CREATE MATERIALIZED TABLE daily_orders" in doc and "FRESHNESS = INTERVAL '5' MINUTE" in doc
    assert "--cascade" in doc and "--wait" in doc


def test_mt_list_status_and_config(shell) -> None:
    shell.run_cell_magic(
        "materialized", "--wait", "CREATE MATERIALIZED TABLE IF_list_t AS SELECT count(*) AS n FROM clicks"
    )
    listing = shell.run_line_magic("mt", "list")
    assert "mt.default.if_list_t" in repr(listing).lower()
    card = shell.run_line_magic("mt", "status IF_list_t")
    assert card.status.name.lower() == "mt.default.if_list_t"
    assert repr(card).lower().startswith("mt.default.if_list_t — continuous · freshness omitted")
    config = repr(shell.run_line_magic("mt", "config"))
    assert "catalog = mt" in config and "spark.master = local[2]" in config
    token = shell.magics_manager.registry["MaterializedMagics"].connection.catalog_config.properties.get("token")
    if token:
        assert token not in config
    with pytest.raises(UsageError, match="Unknown %mt command 'frobnicate'"):
        shell.run_line_magic("mt", "frobnicate")


def test_unload_stops_the_manager_thread(shell) -> None:
    manager = shell._mt_magic_magics.connection.manager
    assert manager.running
    assert any(t.name == "mt-refresh-manager" for t in threading.enumerate())

    shell.run_line_magic("unload_ext", "mt_magic")

    assert not manager.running
    assert not any(t.name in ("mt-refresh-manager", "mt-live-views") for t in threading.enumerate())
    shell.run_line_magic("load_ext", "mt_magic")  # a new kernel-side manager resumes from the catalog
    assert shell._mt_magic_magics.connection.manager.running
    assert "mt.default.page_views" in {s.name for s in shell._mt_magic_magics.connection.manager.statuses()}
