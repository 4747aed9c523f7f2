"""A held refresh under what each Airflow task runs, ``python -m mt_magic refresh`` (issue 49): a bad batch makes the
one-shot fail (exit 1, so the task and its run fail) saying held, which expectation and the Fix; ``main`` stays on
the last good snapshot for Spark and pyiceberg, the refresh staged on the audit branch; once the source is fixed the
next one-shot publishes, and nothing is read twice."""

from __future__ import annotations

import pytest
from airflow_helpers import one_shot
from shared_catalog import CATALOG

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

NS = "oneshot_held"
TABLE = f"{CATALOG}.{NS}.clean"


def test_the_one_shot_holds_a_bad_batch_off_main_and_publishes_once_fixed(connection, one_shot_table) -> None:
    from mt_magic.runtime.refresh import audit

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
    info = base.catalog.load(TABLE)
    assert info.current_snapshot_id == good and rows() == ([(1, 10)], [(1, 10)])
    staged = audit.staged(info)
    assert staged is not None and staged[1] == good  # the held refresh waits on the audit branch

    spark.sql(f"DELETE FROM {CATALOG}.{NS}.orders WHERE amount < 0")  # the source fixed
    done = one_shot(TABLE, "--trigger", "scheduled")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mt_magic result: " in done.stdout
    assert rows() == ([(1, 10), (3, 30)], [(1, 10), (3, 30)])  # published once: nothing lost or read twice
