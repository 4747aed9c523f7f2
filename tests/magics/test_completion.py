"""Completion in ``%%materialized`` cells, query cells and ``%mt`` lines.

The grammar's contexts are checked without a JVM (``complete`` over a fixed name snapshot); then the matcher on a
real InteractiveShell with the extension loaded, through IPython's completer API (what ipykernel, and so
JupyterLab's Tab, calls): table names of the catalog, the columns of the tables a query reads, and names that
appear after a statement; and the cache answers while a catalog load is still blocked.
"""

from __future__ import annotations

import threading

import pytest

from mt_magic.completion import CatalogNames, NameSnapshot, complete, fragment
from mt_magic.sql.ddl.create import CLAUSE_ORDER

NAMES = NameSnapshot(
    materialized=("daily", "sales.`top 10`"),
    plain=("orders", "sales.events"),
    columns={"orders": ("id", "amount", "ds"), "sales.events": ("page", "at"), "daily": ("ds", "n")},
)


def at_end(text: str) -> list[str]:
    return complete(text, len(text), NAMES)


def test_statement_keywords_in_flinks_order() -> None:
    assert at_end("") == [
        "CREATE MATERIALIZED TABLE",
        "CREATE OR ALTER MATERIALIZED TABLE",
        "ALTER MATERIALIZED TABLE",
        "DROP MATERIALIZED TABLE",
        "SHOW MATERIALIZED TABLES",
        "SHOW CREATE MATERIALIZED TABLE",
        "DESCRIBE MATERIALIZED TABLE",
    ]
    assert at_end("cr") == ["CREATE MATERIALIZED TABLE", "CREATE OR ALTER MATERIALIZED TABLE"]
    assert at_end("CREATE MATERIALIZED TABLE t ") == [*CLAUSE_ORDER, "AS"]
    assert at_end("CREATE MATERIALIZED TABLE t PARTITIONED BY (ds) WITH ('a' = 'b') ") == [
        "FRESHNESS",
        "REFRESH_MODE",
        "START_MODE",
        "AS",
    ]
    assert at_end("CREATE MATERIALIZED TABLE t FRESHNESS = ") == ["INTERVAL"]
    assert at_end("CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '5' ") == ["SECOND", "MINUTE", "HOUR", "DAY"]
    assert at_end("CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '5' mi") == ["MINUTE"]
    assert at_end("CREATE MATERIALIZED TABLE t REFRESH_MODE = ") == ["CONTINUOUS", "FULL"]
    assert at_end("ALTER MATERIALIZED TABLE daily ")[:4] == ["SUSPEND", "RESUME", "REFRESH", "AS"]
    assert at_end("ALTER MATERIALIZED TABLE daily SET ") == ["FRESHNESS", "REFRESH_MODE"]
    assert at_end("SELECT 1; DESC") == ["DESCRIBE MATERIALIZED TABLE"]


def test_table_names_where_a_statement_names_or_reads_one() -> None:
    assert at_end("ALTER MATERIALIZED TABLE ") == ["daily", "sales.`top 10`"]
    assert at_end("DROP MATERIALIZED TABLE ") == ["IF EXISTS", "daily", "sales.`top 10`"]
    assert at_end("CREATE OR ALTER MATERIALIZED TABLE d") == ["daily"]
    assert at_end("CREATE MATERIALIZED TABLE ") == []  # a new name: nothing to offer
    assert at_end("CREATE MATERIALIZED TABLE t AS SELECT * FROM ") == [
        "daily",
        "sales.`top 10`",
        "orders",
        "sales.events",
    ]
    assert at_end("CREATE MATERIALIZED TABLE t AS SELECT * FROM orders o JOIN sa") == ["sales.`top 10`", "sales.events"]


def test_columns_of_the_tables_the_statement_reads() -> None:
    text = "CREATE MATERIALIZED TABLE t AS SELECT am FROM orders JOIN sales.events ON true"
    cursor = text.index("am") + 2
    assert fragment(text, cursor) == "am"
    assert complete(text, cursor, NAMES) == ["amount"]
    empty = text.replace(" am ", "  ")
    assert complete(empty, empty.index("  FROM") + 1, NAMES) == ["id", "amount", "ds", "page", "at"]
    query = "SELECT  FROM daily"
    assert complete(query, len("SELECT "), NAMES, query=True) == ["ds", "n"]


def test_with_option_keys_and_values() -> None:
    keys = at_end("CREATE MATERIALIZED TABLE t WITH (")
    assert keys[:2] == ["'incremental'", "'incremental.engine'"]
    assert "'scheduler'" in keys and "'spark.sql.session.timeZone'" in keys
    assert at_end("CREATE MATERIALIZED TABLE t WITH ('incremental' = 'never', 'sch") == ["'scheduler'"]
    assert at_end("CREATE MATERIALIZED TABLE t WITH ('scheduler' = ") == ["'kernel'", "'airflow'"]
    assert at_end("CREATE MATERIALIZED TABLE t WITH ('incremental' = ") == ["'auto'", "'always'", "'strict'", "'never'"]


def test_the_cache_answers_while_the_catalog_is_slow() -> None:
    release, loading, unreachable = threading.Event(), threading.Event(), threading.Event()

    def slow_load() -> NameSnapshot:
        if unreachable.is_set():
            raise OSError("catalog unreachable")
        loading.set()
        release.wait(60)
        return NAMES

    names = CatalogNames(slow_load)
    assert names.current() == NameSnapshot()  # answered at once, and a load started
    assert loading.wait(30) and not release.is_set()
    assert names.current() == NameSnapshot()  # the load is still blocked: the keypress did not wait for it
    release.set()
    assert names.wait(30) and names.current().materialized == ("daily", "sales.`top 10`")

    unreachable.set()  # a failed reload keeps the names it had
    names.invalidate()
    assert names.wait(30) and names.current().materialized == ("daily", "sales.`top 10`")


@pytest.fixture(scope="module")
def shell(spark):
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql("CREATE TABLE IF NOT EXISTS mt.default.tab_orders (order_id INT, amount DOUBLE) USING iceberg")
    yield ip
    ip.run_cell_magic("materialized", "", "DROP MATERIALIZED TABLE IF EXISTS tab_totals")
    ip.run_line_magic("unload_ext", "mt_magic")
    spark.sql("DROP TABLE IF EXISTS mt.default.tab_orders PURGE")


def tab(ip, text: str, cursor: int | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """What IPython's completer (ipykernel's complete_request) offers at ``cursor`` (default: the end)."""
    from IPython.core.completer import provisionalcompleter

    cursor = len(text) if cursor is None else cursor
    with provisionalcompleter():
        return [c.text for c in ip.Completer.completions(text, cursor)]


@pytest.mark.spark
def test_tab_in_a_real_shell(shell) -> None:
    completer = shell._mt_magic_magics._completion
    names = completer.names
    names.invalidate()  # the source table came after %load_ext's first load (a max_age later it would reload)
    assert names.wait(120)
    assert "tab_orders" in names.current().plain
    assert tab(shell, "%%materialized\nCREATE MATERIALIZED TABLE tab_totals AS SELECT * FROM tab_o") == ["tab_orders"]
    cell = "%%materialized\nCREATE MATERIALIZED TABLE tab_totals AS SELECT am FROM tab_orders"
    assert tab(shell, cell, cell.index("am") + 2) == ["amount"]
    assert tab(shell, "%%materialized\nCREATE MATERIALIZED TABLE tab_totals FRESHNESS = INTERVAL '1' ") == [
        "SECOND",
        "MINUTE",
        "HOUR",
        "DAY",
    ]

    loads = names.loads
    shell.run_cell_magic(
        "materialized", "--wait", "CREATE MATERIALIZED TABLE tab_totals AS SELECT sum(amount) AS total FROM tab_orders"
    )
    assert names.wait(120) and names.loads > loads  # the statement reloaded the names in the background
    assert tab(shell, "%%materialized\nALTER MATERIALIZED TABLE tab_t") == ["tab_totals"]
    assert tab(shell, "%mt sta") == ["status"]
    assert tab(shell, "%mt status tab_") == ["tab_totals"]
    assert "tab_totals" not in tab(shell, "tab_")  # outside our cells IPython's own matchers answer
