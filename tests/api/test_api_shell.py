"""The Python API in a real IPython shell with the extension loaded: it drives the kernel's own connection (the
magics' service and manager), so what ``mt_magic.materialize`` creates is on ``%mt`` at once, and its errors are
the magics' errors, with nothing changed."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

NAME = "api_views"
QUALIFIED = f"mt.default.{NAME}"


def eventually(check: Callable[[], bool], what: str, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.fixture(scope="module")
def shell(spark):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mt_magic")
    spark.sql("CREATE TABLE IF NOT EXISTS mt.default.api_clicks (page STRING, user_id INT, ds STRING) USING iceberg")
    spark.sql("INSERT INTO mt.default.api_clicks VALUES ('home', 1, 'd1'), ('home', 2, 'd1'), ('cart', 1, 'd2')")
    yield ip
    # a failed drop raises: a table left behind is adopted by a later test's manager once its lease lapses
    ip.run_cell_magic("materialized", "", f"DROP MATERIALIZED TABLE IF EXISTS {NAME}")
    ip.run_line_magic("unload_ext", "mt_magic")
    spark.sql("DROP TABLE IF EXISTS mt.default.api_clicks PURGE")


def run(ip: InteractiveShell, code: str) -> object:
    """Run ``code`` as a cell; its last expression's value (the cell's ``_``), or its error raised."""
    result = ip.run_cell(code)
    result.raise_error()
    return result.result


def test_materialize_uses_the_kernels_connection_and_shows_on_mt(shell) -> None:
    table = run(
        shell,
        f"""
import mt_magic
mt_magic.materialize(
    "{NAME}",
    "SELECT page, ds, count(*) AS views FROM api_clicks GROUP BY page, ds",
    freshness="INTERVAL '2' MINUTE",
    partitioned_by=["ds"],
    wait=True,
)""",
    )
    from mt_magic.api import session

    assert repr(table) == f"MaterializedTable('{QUALIFIED}')"
    assert session.service() is shell._mt_magic_magics.connection.service  # the magics' own, not a second one
    assert QUALIFIED in repr(shell.run_line_magic("mt", "list")).lower()
    status = run(shell, f"mt_magic.table('{NAME}').status")
    assert status.mode.value == "CONTINUOUS" and status.freshness.total_seconds() == 120
    assert status.last_refresh is not None and status.last_refresh.trigger.value == "initial"
    rows = run(shell, f"mt_magic.table('{NAME}').to_pandas().sort_values(['page', 'ds'])")
    assert rows.values.tolist() == [["cart", "d2", 1], ["home", "d1", 2]]


def test_refresh_history_lineage_and_controls(shell, spark) -> None:
    spark.sql("INSERT INTO mt.default.api_clicks VALUES ('home', 3, 'd1')")
    result = run(shell, f"mt_magic.table('{NAME}').refresh(partition={{'ds': 'd1'}}, wait=True)")
    assert "partition {'ds': 'd1'}" in result.message
    assert result.message.startswith("Refreshed ") and "row(s) written" in result.message, result.message  # issue 38
    history = run(shell, f"mt_magic.table('{NAME}').history()")
    assert list(history.columns)[:4] == ["started_at", "kind", "trigger", "duration_s"]
    assert history["trigger"].iloc[0] == "manual" and len(history) >= 2
    assert history["started_at"].is_monotonic_decreasing
    assert run(shell, f"mt_magic.table('{NAME}').to_pandas().query('page == \"home\"')['views'].tolist()") == [3]
    lineage = run(shell, f"mt_magic.table('{NAME}').lineage")
    assert lineage.upstream == ("mt.default.api_clicks",) == lineage.reads[QUALIFIED]
    # issue 38: the status (the card's "reads" row) names the plain source too, as the lineage does
    assert run(shell, f"mt_magic.table('{NAME}').status.upstream") == lineage.upstream

    run(shell, f"mt_magic.table('{NAME}').suspend()")
    assert run(shell, f"mt_magic.table('{NAME}').status.state.value") == "suspended"
    assert "suspended" in repr(shell.run_line_magic("mt", "list")).lower()
    run(shell, f"mt_magic.table('{NAME}').resume()")
    eventually(lambda: run(shell, f"mt_magic.table('{NAME}').status.state.value") != "suspended", "resumed")


def test_materialize_again_alters_the_query_and_the_schedule(shell) -> None:
    run(
        shell,
        f"""mt_magic.materialize(
    "{NAME}",
    "SELECT page, ds, count(*) AS views, max(user_id) AS top_user FROM api_clicks GROUP BY page, ds",
    freshness="INTERVAL '1' HOUR",
    refresh_mode="full",
)""",
    )
    status = run(shell, f"mt_magic.table('{NAME}').status")
    assert status.mode.value == "FULL" and status.freshness.total_seconds() == 3600
    described = repr(shell.run_cell_magic("materialized", "", f"DESCRIBE MATERIALIZED TABLE {NAME}"))
    assert "top_user" in described and "FULL" in described
    run(shell, f"mt_magic.table('{NAME}').refresh(wait=True)")
    assert "top_user" in run(shell, f"list(mt_magic.table('{NAME}').to_pandas().columns)")


def test_bad_input_is_the_magics_error_and_changes_nothing(shell) -> None:
    import mt_magic
    from mt_magic.errors import MtMagicError, NoSuchMaterializedTableError
    from mt_magic.sql.errors import FreshnessError

    service = shell._mt_magic_magics.connection.service
    catalog = service.workspace.catalog.catalog
    before = (sorted(catalog.list_tables("default")), sorted(s.name for s in service.statuses()))
    with pytest.raises(UsageError) as magic:
        shell.run_line_magic("mt", "history nope")
    with pytest.raises(NoSuchMaterializedTableError) as api:
        mt_magic.table("nope")  # in the shell's process: the kernel's connection, as from a cell
    assert str(api.value) == str(magic.value)

    with pytest.raises(UsageError) as magic:
        shell.run_cell_magic(
            "materialized", "", "CREATE MATERIALIZED TABLE api_bad FRESHNESS = INTERVAL '1' MONTH AS SELECT 1 AS one"
        )
    with pytest.raises(FreshnessError) as bad_freshness:
        mt_magic.materialize("api_bad", "SELECT 1 AS one", freshness="INTERVAL '1' MONTH")
    assert bad_freshness.value.fix is not None and f"Fix: {bad_freshness.value.fix}" in str(magic.value)
    assert bad_freshness.value.problem in str(magic.value)

    with pytest.raises(UsageError, match="no_such_source") as magic:
        shell.run_cell_magic("materialized", "", "CREATE MATERIALIZED TABLE api_bad AS SELECT * FROM no_such_source")
    with pytest.raises(MtMagicError) as bad_source:
        mt_magic.materialize("api_bad", "SELECT * FROM no_such_source")
    # the same error, placed where each caller wrote the name: the cell's column 52, the query argument's column 15
    assert "line 1, column 52" in str(magic.value)
    assert str(bad_source.value) == str(magic.value).replace("line 1, column 52", "line 1, column 15")

    assert (sorted(catalog.list_tables("default")), sorted(s.name for s in service.statuses())) == before
