"""A cell is checked against the workflow schedulers before any statement applies (issue 37): a statement for a
table on an unreachable Airflow leaves the whole cell unapplied, on the real service, catalog and Spark."""

from __future__ import annotations

import pytest

from mt_magic.errors import WorkflowSchedulerError
from mt_magic.loopback import free_port
from mt_magic.runtime.cell import execute_cell
from mt_magic.scheduling.airflow_api import AirflowSettings
from mt_magic.sql import parse_cell
from mt_magic.vocabulary import WorkflowSchedulerKind


def test_a_cell_with_a_create_for_an_unreachable_airflow_changes_nothing(mt, spark, monkeypatch) -> None:
    """ALTER … AS (which cannot be undone) then a CREATE on Airflow at a closed port: refused before the ALTER
    applies; the query stays, the new table is not created, and the error names the CREATE."""
    monkeypatch.delenv("MT_MAGIC_AIRFLOW_URL", raising=False)
    namespace = mt.workspace.default_namespace
    spark.sql(f"CREATE TABLE mtit.{namespace}.src (k INT) USING iceberg")
    spark.sql(f"INSERT INTO mtit.{namespace}.src VALUES (1)")
    execute_cell(mt, parse_cell("CREATE MATERIALIZED TABLE t AS SELECT k FROM src"))[0].refresh.result()
    closed = AirflowSettings(url=f"http://127.0.0.1:{free_port()}", token="t", timeout=5)
    mt.workflows.configure(WorkflowSchedulerKind.KERNEL, closed)
    cell = (
        "ALTER MATERIALIZED TABLE t AS SELECT k, 2 AS two FROM src;"
        "CREATE MATERIALIZED TABLE u WITH ('scheduler' = 'airflow') AS SELECT k FROM src"
    )
    with pytest.raises(WorkflowSchedulerError, match=r"^Statement 2 of the cell: .*cannot be reached.*nothing was"):
        execute_cell(mt, parse_cell(cell))
    _, definition = mt.workspace.catalog.load_materialized(f"mtit.{namespace}.t")
    assert definition.query == "SELECT k FROM src"
    assert not mt.workspace.catalog.exists(f"mtit.{namespace}.u")
