"""A held refresh under what each Airflow task runs, ``python -m mt_magic refresh`` (issue 49): a bad batch makes the
one-shot fail (exit 1, so the task and its run fail) saying held, which expectation and the Fix; ``main`` stays on
the last good snapshot for Spark and pyiceberg, the refresh staged on the audit branch; once the source is fixed the
next one-shot publishes, and nothing is read twice. The kernel, which did not run either refresh, shows the held one on
the table's card and in ``%mt status`` from the catalog alone (the staging branch and its counts), with the Spark SQL
that reads the failing rows in place of a sample (rows are not in the catalog's metadata), and no longer once it is
published."""

from __future__ import annotations

import pytest
from airflow_helpers import one_shot
from mt_testing import OneTable
from shared_catalog import CATALOG

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

NS = "oneshot_held"
TABLE = f"{CATALOG}.{NS}.clean"


def test_the_one_shot_holds_a_bad_batch_off_main_and_publishes_once_fixed(connection, one_shot_table) -> None:
    from mt_magic.runtime.refresh import audit
    from mt_magic.widgets.render import dashboard_html, detail_rows, title_html

    one_shot_table(
        NS,
        "orders (id INT, amount INT)",
        "(1, 10)",
        "CREATE MATERIALIZED TABLE clean (CONSTRAINT positive EXPECT (amount >= 0) ON VIOLATION FAIL UPDATE) "
        "AS SELECT id, amount FROM orders",
    )
    base = connection.service.workspace
    spark = base.spark
    good = base.catalog.load(TABLE).current_snapshot_id

    def rows() -> tuple[list[tuple], list[tuple]]:  # Spark's and pyiceberg's reading of main
        arrow = base.catalog.catalog.load_table(f"{NS}.clean").scan().to_arrow()
        by_pyiceberg = sorted(zip(arrow.column("id").to_pylist(), arrow.column("amount").to_pylist(), strict=True))
        return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {TABLE}").collect()), by_pyiceberg

    spark.sql(f"INSERT INTO {CATALOG}.{NS}.orders VALUES (2, -5), (3, 30)")
    held = one_shot(TABLE, "--trigger", "scheduled")
    assert held.returncode == 1, held.stdout[-2000:] + held.stderr[-2000:]
    assert f"refresh of {TABLE} held: expectation positive failed on 1 of" in held.stderr, held.stderr[-3000:]
    assert "Fix: fix the source rows" in held.stderr
    [error] = [line for line in held.stderr.splitlines() if line.startswith("error: ")]  # Airflow keeps this line
    assert "amount=-5" not in error and "expectation positive failed on 1 of" in error, error
    info = base.catalog.load(TABLE)
    assert info.current_snapshot_id == good and rows() == ([(1, 10)], [(1, 10)])
    staged = audit.staged(info)
    assert staged is not None and staged[1] == good  # the held refresh waits on the audit branch
    status = _kernel_status(connection)  # the kernel's card and %mt status, from the catalog alone
    assert status.held is not None and [(e.name, e.failed) for e in status.held.expectations] == [("positive", 1)]
    [seen] = status.held.expectations
    assert seen.sample == () and sorted(tuple(r) for r in spark.sql(seen.to_see).collect()) == [(2, -5)]
    assert dict(detail_rows(status))["held"].startswith("expectation positive failed on 1 of")
    assert f"(see them: {seen.to_see})" in dict(detail_rows(status))["held"]
    assert "HELD: positive" in title_html(status) and "HELD: positive" in dashboard_html([status])

    spark.sql(f"DELETE FROM {CATALOG}.{NS}.orders WHERE amount < 0")  # the source fixed
    done = one_shot(TABLE, "--trigger", "scheduled")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mt_magic result: " in done.stdout
    assert rows() == ([(1, 10), (3, 30)], [(1, 10), (3, 30)])  # published once: nothing lost or read twice
    assert _kernel_status(connection).held is None


def _kernel_status(connection):  # type: ignore[no-untyped-def]
    """The table's status as the kernel's manager shows it on the card and in ``%mt status``: a manager that only
    reads the catalog (scheduling off: it refreshes nothing itself)."""
    from mt_magic.runtime.manager.refresh_manager import RefreshManager

    manager = RefreshManager(OneTable(connection.service.engine, TABLE), scheduling=False)  # type: ignore[arg-type]
    manager.start()
    try:
        return manager.status(TABLE)
    finally:
        manager.stop()
