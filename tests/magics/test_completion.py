"""Completion in ``%%materialized`` cells, query cells and ``%mt`` lines.

The grammar's contexts are checked without a JVM (``complete`` over a fixed name snapshot): keywords, table names
(also part by part after ``mt.`` and ``mt.ns.``), the columns of every relation a query reads wherever the cursor is
in it, aliases, CTEs and subqueries, ``(`` for CREATE's column list. Then the completer on a real InteractiveShell
with the extension loaded, through IPython's completer API (what ipykernel, and so JupyterLab's Tab, calls): table
names of the catalog, the columns of the tables a query reads, names that appear after any cell (a ``spark.sql``
too), no Python names anywhere in a SQL cell, and a Tab that answers while the catalog load is blocked.
"""

from __future__ import annotations

import threading

import pytest

from mt_magic.completion import CatalogNames, NameSnapshot, complete, fragment
from mt_magic.completion.names import AskedNames
from mt_magic.sql.ddl.create import CLAUSE_ORDER

NAMES = NameSnapshot(
    materialized=("daily", "sales.`top 10`"),
    plain=("orders", "sales.events"),
    columns={
        "orders": ("id", "amount", "ds"),
        "default.orders": ("id", "amount", "ds"),
        "mt.default.orders": ("id", "amount", "ds"),
        "sales.events": ("page", "at"),
        "mt.sales.events": ("page", "at"),
        "daily": ("ds", "n"),
    },
    materialized_paths=(("mt", "default", "daily"), ("mt", "sales", "top 10")),
    plain_paths=(("mt", "default", "orders"), ("mt", "sales", "events")),
)


def at_end(text: str) -> list[str]:
    return complete(text, len(text), NAMES)


def at_bar(text: str, *, query: bool = False) -> list[str]:
    """What is offered at the ``|`` in ``text`` (the cursor, with text after it)."""
    cursor = text.index("|")
    return complete(text.replace("|", "", 1), cursor, NAMES, query=query)


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
    assert at_end("CREATE MATERIALIZED TABLE t ") == ["(", *CLAUSE_ORDER, "AS"]
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
    assert complete(empty, empty.index("  FROM") + 1, NAMES) == [
        *("id", "amount", "ds", "page", "at"),
        *("orders", "sales.events"),  # then how the query names what it reads
    ]
    query = "SELECT  FROM daily"
    assert complete(query, len("SELECT "), NAMES, query=True) == ["ds", "n", "daily"]


def test_columns_wherever_the_cursor_is_in_the_select() -> None:
    create = "CREATE MATERIALIZED TABLE t AS "
    every = ["id", "amount", "ds", "page", "at"]
    assert at_bar(create + "SELECT | FROM orders o JOIN sales.events e ON o.id = e.page") == [*every, "o", "e"]
    assert at_bar(create + "SELECT a| FROM orders o JOIN sales.events e ON true") == ["amount", "at"]
    assert at_bar(create + "SELECT count(*) FROM orders o JOIN sales.events e ON |") == [*every, "o", "e"]
    assert at_bar(create + "SELECT count(*) FROM orders WHERE amount > 1 GROUP BY |") == [
        "id",
        "amount",
        "ds",
        "orders",
    ]
    assert at_bar(create + "SELECT count(| FROM orders") == ["id", "amount", "ds", "orders"]
    assert at_bar(create + "SELECT * FROM orders WHERE |") == ["id", "amount", "ds", "orders"]
    assert at_bar("SELECT | FROM mt.default.orders", query=True) == ["id", "amount", "ds", "mt.default.orders"]


def test_aliases_ctes_and_subqueries() -> None:
    create = "CREATE MATERIALIZED TABLE t AS "
    assert at_bar(create + "SELECT s.| FROM orders s") == ["id", "amount", "ds"]
    assert at_bar(create + "SELECT s.am| FROM orders AS s") == ["amount"]
    assert at_bar(create + "SELECT * FROM orders s JOIN sales.events e ON s.id = e.|") == ["page", "at"]
    assert at_bar(create + "SELECT events.| FROM mt.sales.events") == ["page", "at"]
    assert at_bar(create + "SELECT x.| FROM orders s") == []  # no relation of that name
    cte = create + "WITH big AS (SELECT id AS order_id, amount FROM orders) SELECT big.| FROM big"
    assert at_bar(cte) == ["order_id", "amount"]
    assert at_bar(create + "SELECT sub.| FROM (SELECT ds, count(*) AS n FROM orders GROUP BY ds) sub") == ["ds", "n"]


RICH_CELL = (
    "CREATE MATERIALIZED TABLE mt.sales.`top 10` (ds STRING, n BIGINT, PRIMARY KEY (ds) NOT ENFORCED) COMMENT 'x'\n"
    "PARTITIONED BY (ds) WITH ('incremental' = 'auto') FRESHNESS = INTERVAL '5' MINUTE REFRESH_MODE = FULL AS\n"
    "WITH c AS (SELECT id, amount FROM orders o WHERE o.amount > 1) -- the big ones\n"
    "SELECT s.ds, count(*) AS n, sum(c.amount), CAST(s.id AS DECIMAL(10, 2)), CASE WHEN s.id > 1 THEN 'a' END\n"
    "FROM mt.default.orders AS s LEFT JOIN c ON s.id = c.id JOIN (SELECT page FROM sales.events) e ON true\n"
    "WHERE s.ds IN (SELECT ds FROM daily) GROUP BY s.ds HAVING count(*) > 1 ORDER BY 1;\n"
    "ALTER MATERIALIZED TABLE daily SET FRESHNESS = INTERVAL '1' HOUR"
)


def test_every_cursor_position_of_a_rich_cell(caplog: pytest.LogCaptureFixture) -> None:
    """Completion answers at each offset of a cell using every clause, typed up to there (as a statement and as
    a query cell would hold it), without raising or logging (sqlglot warns of what it reads as a Command)."""
    with caplog.at_level("DEBUG"):
        for cursor in range(len(RICH_CELL) + 1):
            for query in (False, True):
                complete(RICH_CELL[:cursor], cursor, NAMES, query=query)
    # this thread's records only: a background thread of an earlier test (a scheduler's, a server's) may log meanwhile
    assert [r.getMessage() for r in caplog.records if r.thread == threading.get_ident()] == []
    inside_cte = RICH_CELL.index("o.amount > 1") + 2
    assert complete(RICH_CELL, inside_cte, NAMES) == ["id", "amount", "ds"]  # o is orders, inside the CTE
    assert complete(RICH_CELL, RICH_CELL.index("page FROM") + 2, NAMES) == ["page"]
    assert complete(RICH_CELL, RICH_CELL.index("c.amount)") + 2, NAMES) == ["id", "amount"]  # the CTE's columns


def test_catalog_qualified_names_part_by_part() -> None:
    select = "CREATE MATERIALIZED TABLE t AS SELECT * FROM "
    assert at_end(select + "mt.") == ["default", "sales"]
    assert at_end(select + "mt.default.") == ["daily", "orders"]
    assert at_end(select + "mt.default.or") == ["orders"]
    assert at_end(select + "sales.") == ["`top 10`", "events"]
    assert at_end(select + "mt.sales.e") == ["events"]
    assert at_end("ALTER MATERIALIZED TABLE mt.default.d") == ["daily"]
    assert at_end("DROP MATERIALIZED TABLE IF EXISTS mt.") == ["default", "sales"]
    assert at_end("CREATE MATERIALIZED TABLE mt.default.") == []  # a new name: nothing to offer
    assert fragment(select + "mt.default.or", len(select + "mt.default.or")) == "or"


def test_a_column_list_after_creates_table_name() -> None:
    assert at_end("CREATE MATERIALIZED TABLE mt.sales.t ")[:2] == ["(", "COMMENT"]
    assert at_end("CREATE MATERIALIZED TABLE t (") == []  # no query yet: nothing to offer
    query = " AS SELECT ds, count(*) AS n FROM orders GROUP BY ds"
    assert at_bar("CREATE MATERIALIZED TABLE t (|)" + query) == ["ds", "n"]  # the query's result columns
    assert at_bar("CREATE MATERIALIZED TABLE t (ds, |" + query) == ["n"]
    assert at_bar("CREATE MATERIALIZED TABLE t (ds |)" + query) == []  # a type comes next
    assert at_bar("CREATE MATERIALIZED TABLE t PARTITIONED BY (|) AS SELECT * FROM orders") == ["id", "amount", "ds"]
    assert at_end("CREATE MATERIALIZED TABLE t PARTITIONED BY ") == ["("]
    assert at_end("CREATE MATERIALIZED TABLE t (ds, n) ") == [*CLAUSE_ORDER, "AS"]
    assert at_end("CREATE MATERIALIZED TABLE t COMMENT 'x' ")[0] == "DISTRIBUTED BY"


def test_with_option_keys_and_values() -> None:
    keys = at_end("CREATE MATERIALIZED TABLE t WITH (")
    assert keys[:2] == ["'incremental'", "'incremental.engine'"]
    assert "'scheduler'" in keys and "'spark.sql.session.timeZone'" in keys
    assert at_end("CREATE MATERIALIZED TABLE t WITH ('incremental' = 'never', 'sch") == ["'scheduler'"]
    assert at_end("CREATE MATERIALIZED TABLE t WITH ('scheduler' = ") == ["'kernel'", "'airflow'"]
    assert at_end("CREATE MATERIALIZED TABLE t WITH ('incremental' = ") == ["'auto'", "'always'", "'strict'", "'never'"]


def test_resume_with_offers_spark_run_settings_not_creates_options() -> None:
    """RESUME WITH takes Spark settings of the resumed refreshes (anything else is refused): those are offered."""
    from mt_magic.options.settings import RUN_SETTINGS

    keys = at_end("ALTER MATERIALIZED TABLE t RESUME WITH (")
    assert keys == [f"'{key}'" for key in RUN_SETTINGS] and "'incremental'" not in keys
    assert at_end("ALTER MATERIALIZED TABLE t RESUME WITH ('spark.sql.shuffle.partitions' = '8', 'spark.sql.ad") == [
        "'spark.sql.adaptive.enabled'",
        "'spark.sql.adaptive.coalescePartitions.enabled'",
    ]
    assert at_end("ALTER MATERIALIZED TABLE t RESUME WITH ('spark.sql.adaptive.enabled' = ") == []


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


def test_a_tab_that_asked_for_names_the_cache_lacks_loads_them_once() -> None:
    """A table another process made after the last load: the Tab that asked for it starts one load (a repeated Tab
    on the same text does not), and a failed load does not wait ``max_age`` before the next."""
    calls: list[int] = []
    fail = threading.Event()

    def load() -> NameSnapshot:
        calls.append(1)
        if fail.is_set():
            raise OSError("catalog unreachable")
        return NAMES

    names = CatalogNames(load, max_age=3600)
    names.reload()
    assert names.wait(30) and len(calls) == 1
    names.current()
    assert names.wait(30) and len(calls) == 1  # fresh: a keypress loads nothing
    names.missing("FROM mt.ns.ze")
    assert names.wait(30) and len(calls) == 2
    names.missing("FROM mt.ns.ze")
    assert names.wait(30) and len(calls) == 2  # the same Tab again: no second load
    names.missing("FROM mt.ns.zo")
    assert names.wait(30) and len(calls) == 3

    asked = AskedNames.of(NAMES)
    assert complete("SELECT  FROM mt.ns.zoo", len("SELECT "), asked, query=True) == ["mt.ns.zoo"]
    assert asked.unknown == [("mt", "ns", "zoo")]  # read, but its columns unknown: the completer asks for a load
    assert complete("SELECT  FROM orders", len("SELECT "), AskedNames.of(NAMES), query=True)[:1] == ["id"]


def test_an_mt_line_part_by_part() -> None:
    """The command, its table (``explain``: or a statement, a query), then its flags, from the magic's own parser;
    never Python names on a ``%mt`` line."""
    from mt_magic.completion.mt_line import complete_mt_line, flags_of
    from mt_magic.magics import MT_COMMANDS, MaterializedMagics

    spec = flags_of(MaterializedMagics.mt.parser, MT_COMMANDS)
    assert spec.flags["refresh"] == ("--partition", "--cascade") and spec.flags["status"] == ()

    def mt_line(text: str) -> list[str] | None:
        found = complete_mt_line(text, spec, NAMES)
        return None if found is None else found[1]

    assert mt_line("%mt hi") == ["history"]
    assert mt_line("%mt refresh ") == ["daily", "sales.`top 10`"]
    assert mt_line("%mt refresh daily ") == ["--partition", "--cascade"]
    assert mt_line("%mt refresh daily --c") == ["--cascade"]
    assert mt_line("%mt refresh daily --cascade ") == ["--partition"]
    assert mt_line("%mt refresh daily --partition ") == []  # its value is a predicate the user writes
    assert mt_line("%mt status daily ") == mt_line("%mt config ") == mt_line("%mt nonsense ") == []
    assert mt_line("%mt explain ") == [
        "daily",
        "sales.`top 10`",
        "CREATE MATERIALIZED TABLE",
        "CREATE OR ALTER MATERIALIZED TABLE",
        "ALTER MATERIALIZED TABLE",
        "SELECT",
    ]
    assert mt_line("%mt explain SELECT amount FROM orders WHERE am") == ["amount"]
    assert mt_line("%mt explain CREATE MATERIALIZED TABLE t AS SELECT * FROM ord") == ["orders"]
    assert mt_line("%mt explain CREATE MATERIALIZED TABLE t FRESHNESS = INTERVAL '1' ") == [
        "SECOND",
        "MINUTE",
        "HOUR",
        "DAY",
    ]
    assert mt_line("%mt") is None  # still the magic's name: IPython completes magics


def test_mt_explain_alter_completes_as_the_cell_with_the_changes_explain_previews() -> None:
    """Issue 39: after ``%mt explain ALTER`` the statement completes as in a cell — the table names, then only the
    ALTER actions explain previews (the others it refuses), then each one's clause, and the query after AS."""
    from mt_magic.completion.grammar import ACTIONS
    from mt_magic.completion.mt_line import EXPLAINED_ACTIONS, complete_mt_line, flags_of
    from mt_magic.magics import MT_COMMANDS, MaterializedMagics
    from mt_magic.runtime.statements.registry import EXPLAINED
    from mt_magic.sql import parse_cell

    spec = flags_of(MaterializedMagics.mt.parser, MT_COMMANDS)

    def mt_line(text: str) -> list[str] | None:
        found = complete_mt_line(text, spec, NAMES)
        return None if found is None else found[1]

    assert mt_line("%mt explain al") == ["ALTER MATERIALIZED TABLE"]
    assert mt_line("%mt explain ALTER ") == ["MATERIALIZED TABLE"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE ") == ["daily", "sales.`top 10`"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE mt.") == ["default", "sales"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE daily ") == [
        "RESUME",
        "AS",
        "SET FRESHNESS",
        "SET REFRESH_MODE",
    ]
    assert mt_line("%mt explain alter materialized table daily set ") == ["FRESHNESS", "REFRESH_MODE"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE daily SET REFRESH_MODE = ") == ["CONTINUOUS", "FULL"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE daily SET FRESHNESS = INTERVAL '1' H") == ["HOUR"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE daily RESUME ") == ["WITH"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE daily AS SELECT * FROM ord") == ["orders"]
    assert mt_line("%mt explain ALTER MATERIALIZED TABLE daily AS SELECT id FROM orders WHERE am") == ["amount"]
    assert mt_line("%mt explain CREATE OR ALTER MATERIALIZED TABLE ") == ["daily", "sales.`top 10`"]
    # the cell still offers every action; explain's are exactly those whose statement it takes
    assert complete("ALTER MATERIALIZED TABLE daily ", 31, NAMES) == list(ACTIONS)
    assert at_end("ALTER MATERIALIZED TABLE daily SET FRESHNESS = INTERVAL '5' ") == ["SECOND", "MINUTE", "HOUR", "DAY"]
    samples = {"AS": "AS SELECT 1 AS one", "RENAME TO": "RENAME TO other", "REFRESH": "REFRESH"}
    samples |= {"SET FRESHNESS": "SET FRESHNESS = INTERVAL '1' HOUR", "SET REFRESH_MODE": "SET REFRESH_MODE = FULL"}
    samples |= {"SET": "SET ('scheduler' = 'kernel')", "SUSPEND": "SUSPEND", "RESUME": "RESUME"}
    samples |= {"ADD CONSTRAINT": "ADD CONSTRAINT c EXPECT (x > 0)", "DROP CONSTRAINT": "DROP CONSTRAINT c"}
    taken = [a for a in ACTIONS if isinstance(parse_cell(f"ALTER MATERIALIZED TABLE t {samples[a]}")[0], EXPLAINED)]
    assert tuple(taken) == EXPLAINED_ACTIONS


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
    cell = "%%materialized --wait\nCREATE MATERIALIZED TABLE tab_totals AS SELECT sum(amount) AS total FROM tab_orders"
    assert shell.run_cell(cell).success
    assert names.wait(120) and names.loads > loads  # the cell reloaded the names in the background
    assert tab(shell, "%%materialized\nALTER MATERIALIZED TABLE tab_t") == ["tab_totals"]
    assert tab(shell, "%mt sta") == ["status"]
    assert tab(shell, "%mt status tab_") == ["tab_totals"]
    assert tab(shell, "%mt refresh tab_totals --") == ["--partition", "--cascade"]
    assert tab(shell, "%mt refresh tab_totals --cascade imp") == []  # no Python names on a %mt line
    assert "tab_totals" not in tab(shell, "tab_")  # outside our cells IPython's own matchers answer


@pytest.mark.spark
def test_no_python_names_anywhere_in_a_sql_cell(shell) -> None:
    assert shell._mt_magic_magics._completion.names.wait(120)
    assert "import" in tab(shell, "imp")  # a Python cell: IPython's own matchers answer
    for cell in (
        "%%materialized\nCREATE MATERIALIZED TABLE tab_none AS SELECT ",  # nothing read yet: nothing to offer
        "%%materialized\nCREATE MATERIALIZED TABLE tab_none AS SELECT im",
        "%%materialized\nCREATE MATERIALIZED TABLE tab_none (",
        "%%materialized\nCREATE MATERIALIZED TABLE tab_none AS SELECT * FROM tab_orders WHERE amount > 'x",
        "%%materialized ",
        "%%mtsql\nSELECT ",
        "%%mtsql\nSELECT 1 AS n, ",
    ):
        assert tab(shell, cell) == [], cell
    select = "%%materialized\nCREATE MATERIALIZED TABLE tab_none AS SELECT  FROM tab_orders"
    assert tab(shell, select, select.index(" FROM")) == ["order_id", "amount", "tab_orders"]


@pytest.mark.spark
def test_aliases_and_catalog_qualified_names_in_a_real_shell(shell) -> None:
    names = shell._mt_magic_magics._completion.names
    names.invalidate()
    assert names.wait(120)
    create = "%%materialized\nCREATE MATERIALIZED TABLE tab_none AS SELECT "
    assert tab(shell, create + "* FROM mt.") == ["default"]
    assert tab(shell, create + "* FROM mt.default.tab_o") == ["tab_orders"]
    cell = create + "s.am FROM tab_orders s"
    assert tab(shell, cell, cell.index(" FROM")) == ["amount"]
    cell = create + "s. FROM mt.default.tab_orders AS s"
    assert tab(shell, cell, cell.index(" FROM")) == ["order_id", "amount"]
    assert tab(shell, "%%materialized\nCREATE MATERIALIZED TABLE tab_none ")[0] == "("


@pytest.mark.spark
def test_a_table_made_by_spark_sql_is_offered_at_the_next_tab(shell) -> None:
    names = shell._mt_magic_magics._completion.names
    assert names.wait(120)
    made = "sql('CREATE TABLE mt.default.tab_by_spark (tab_key INT, tab_customer STRING) USING iceberg')"
    try:
        assert shell.run_cell(f"from pyspark.sql import SparkSession as _S\n_S.getActiveSession().{made}").success
        assert names.wait(120)  # the load after the cell, in the background
        create = "%%materialized\nCREATE MATERIALIZED TABLE tab_none AS SELECT "
        assert tab(shell, create + "* FROM tab_by") == ["tab_by_spark"]
        cell = create + "tab_c FROM tab_by_spark"
        assert tab(shell, cell, cell.index(" FROM")) == ["tab_customer"]
    finally:
        shell.run_cell("_S.getActiveSession().sql('DROP TABLE IF EXISTS mt.default.tab_by_spark PURGE')")


@pytest.mark.spark
def test_a_tab_never_waits_for_the_catalog(shell) -> None:
    """A load blocked on an event: the Tab still answers (from what the cache had); if it waited, this test
    would hang until the load was released, which only happens after the Tab returned."""
    names = shell._mt_magic_magics._completion.names
    shell.run_cell("pass")  # a cell ran: the names are loaded again, the fixture's tab_orders among them
    assert names.wait(120)
    loaded, blocked, release = names.current(), threading.Event(), threading.Event()

    def blocked_load() -> NameSnapshot:
        blocked.set()
        release.wait(300)
        return loaded

    real_load, names._load = names._load, blocked_load
    try:
        shell.run_cell("1 + 1")  # a cell ran: a reload starts (and blocks)
        assert blocked.wait(120)
        # tab_orders is the fixture's (the test needs no other test's table)
        assert tab(shell, "%%materialized\nCREATE MATERIALIZED TABLE t AS SELECT * FROM tab_o") == ["tab_orders"]
        assert not release.is_set()
    finally:
        release.set()
        assert names.wait(120)
        names._load = real_load


@pytest.mark.spark
def test_a_table_made_elsewhere_is_offered_at_the_tab_after_the_one_that_missed_it(shell, spark) -> None:
    """No cell runs here (a table another kernel or pyiceberg made): the Tab that asks for its name, or for its
    columns, answers at once from what the cache holds and starts a load; the next Tab offers it (issue 51)."""
    names = shell._mt_magic_magics._completion.names
    assert names.wait(120)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS mt.tab_elsewhere")
    spark.sql("CREATE TABLE IF NOT EXISTS mt.tab_elsewhere.zeb (zid INT, zname STRING) USING iceberg")
    create = "%%materialized\nCREATE MATERIALIZED TABLE tab_none AS SELECT "
    try:
        assert tab(shell, create + "* FROM mt.tab_elsewhere.ze") == []  # not loaded yet: nothing, at once
        assert names.wait(120)
        assert tab(shell, create + "* FROM mt.tab_elsewhere.ze") == ["zeb"]
        cell = create + " FROM mt.tab_elsewhere.zeb"
        assert tab(shell, cell, cell.index(" FROM")) == ["zid", "zname", "mt.tab_elsewhere.zeb"]

        spark.sql("CREATE TABLE mt.tab_elsewhere.zap (pid INT, pname STRING) USING iceberg")
        cell = create + " FROM mt.tab_elsewhere.zap"
        assert tab(shell, cell, cell.index(" FROM")) == ["mt.tab_elsewhere.zap"]  # its columns unknown yet
        assert names.wait(120)
        assert tab(shell, cell, cell.index(" FROM")) == ["pid", "pname", "mt.tab_elsewhere.zap"]
    finally:
        for table in ("zeb", "zap"):
            spark.sql(f"DROP TABLE IF EXISTS mt.tab_elsewhere.{table} PURGE")
        spark.sql("DROP NAMESPACE IF EXISTS mt.tab_elsewhere")
