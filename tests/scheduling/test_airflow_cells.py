"""SUSPEND, RESUME and REFRESH in a ``%%materialized`` cell, for a table on Airflow (a fake Airflow API; the real one
runs in tests/airflow): each statement's check reads the table's scheduler and its apply tells that one, unless a
statement before it in the cell moved the table to another scheduler — then the apply reads it again, and the table
never ends up with two schedulers."""

from __future__ import annotations

import pytest
from fake_airflow import SETTINGS, FakeAirflowClient
from mt_testing import catalog_requests

from mt_magic.runtime.cell import execute_cell
from mt_magic.scheduling.dags import dag_id
from mt_magic.sql import parse_cell
from mt_magic.vocabulary import WorkflowSchedulerKind


@pytest.fixture
def fake(mt, spark) -> FakeAirflowClient:  # type: ignore[no-untyped-def]
    client = FakeAirflowClient()
    mt.workflows.configure(WorkflowSchedulerKind.KERNEL, SETTINGS, client, parse_follow_ups=())
    spark.sql(f"CREATE TABLE mtit.{mt.workspace.default_namespace}.src (k INT) USING iceberg")
    return client


def _create(mt, scheduler: str) -> str:  # type: ignore[no-untyped-def]
    cell = (
        f"CREATE MATERIALIZED TABLE t WITH ('scheduler' = '{scheduler}') FRESHNESS = INTERVAL '1' HOUR "
        "AS SELECT k FROM src"
    )
    result = execute_cell(mt, parse_cell(cell))[0]
    if result.refresh is not None:
        result.refresh.result(timeout=120)
    return f"mtit.{mt.workspace.default_namespace}.t"


def test_suspend_resume_and_refresh_in_a_cell_tell_airflow_from_one_read_each(mt, fake) -> None:
    name = _create(mt, "airflow")
    fake.add_dag(dag_id(name))  # Airflow parsed it
    fake.calls.clear()
    path = f"namespaces/{mt.workspace.default_namespace}/tables/t"
    loads = lambda request: request.url if request.method == "GET" and path in request.url else None  # noqa: E731
    cell = "ALTER MATERIALIZED TABLE t SUSPEND; ALTER MATERIALIZED TABLE t RESUME; ALTER MATERIALIZED TABLE t REFRESH"
    with catalog_requests(mt, loads) as counts:
        execute_cell(mt, parse_cell(cell))
    dag = dag_id(name)
    assert [c for c in fake.calls if c[0] != "dag"] == [
        ("set_paused", dag, "True"),
        ("set_paused", dag, "False"),
        ("trigger", dag),
    ]
    assert fake.of("dag") == [("dag", dag)] * 3  # each check asks for the DAG once; no apply asks again
    # Each statement reads the scheduler once (its check); SUSPEND's and RESUME's applies read the definition once,
    # check (RESUME's options) and write on that load, RESUME's also builds the manager's record: 2 + 3 + 1 (before
    # d048401 the applies read the table twice more: 3 + 5 + 1).
    assert sum(counts.values()) == 6, counts


def test_a_cell_that_moves_the_table_first_reads_its_scheduler_again(mt, fake) -> None:
    """The checks run before the move applies: the table's scheduler they read is stale by then."""
    name = _create(mt, "airflow")
    dag = dag_id(name)
    fake.add_dag(dag)
    cell = "ALTER MATERIALIZED TABLE t SET ('scheduler' = 'kernel'); ALTER MATERIALIZED TABLE t RESUME"
    execute_cell(mt, parse_cell(cell))
    assert fake.dag_infos[dag].is_paused  # moved to the kernel; RESUME did not wake the DAG on Airflow again
    assert mt.status(name).scheduler is WorkflowSchedulerKind.KERNEL

    cell = "ALTER MATERIALIZED TABLE t SET ('scheduler' = 'airflow'); ALTER MATERIALIZED TABLE t SUSPEND"
    execute_cell(mt, parse_cell(cell))
    assert fake.dag_infos[dag].is_paused  # back on Airflow, whose DAG SUSPEND paused
    assert fake.of("set_paused")[-1] == ("set_paused", dag, "True")
