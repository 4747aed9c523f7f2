"""Refresh workflows on a real Airflow 3: CREATE in a service → the DAG appears → Airflow's run refreshes the table
on Spark (``python -m mt_magic refresh`` under the table's lease) → the rows equal the query and the catalog's
refresh state shows it; a chain runs in Asset order; SUSPEND / RESUME / REFRESH PARTITION / DROP reach Airflow; a
failing refresh is a failed task (retried) with its error in the log; bad credentials or a DAG not parsed yet
refuse the statement and change nothing.

The tests of this module run in order on the same tables (Airflow's runs are what takes time).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

import pytest
from airflow_helpers import finished_run, rows, run, wait_stale, wait_until
from shared_catalog import CATALOG

from mt_magic.scheduling.local_airflow import LocalAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.timeout(900)]

NS = "airflow_e2e"
T = TypeVar("T")
DAILY, BY_DS, BROKEN, LATE = (f"{CATALOG}.{NS}.{t}" for t in ("daily", "by_ds", "broken", "late"))
DAILY_QUERY = "SELECT ds, k, sum(v) AS total FROM events GROUP BY ds, k"
BY_DS_QUERY = "SELECT ds, sum(total) AS total FROM daily GROUP BY ds"
BROKEN_QUERY = "SELECT k, CASE WHEN v < 100 THEN v ELSE raise_error(concat('v too large: ', v)) END AS v FROM bad"


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def mt(connection, airflow_settings) -> Iterator[Any]:
    """An inline service in its own namespace whose Airflow is the test's."""
    from mt_magic.runtime.refresh.engine import Engine
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.vocabulary import WorkflowSchedulerKind

    base = connection.service.workspace
    base.catalog.catalog.create_namespace_if_not_exists(NS)
    service = MaterializedTables.inline(Engine(replace(base, default_namespace=NS), connection.service.engine.jobs))
    service.workflows.configure(WorkflowSchedulerKind.KERNEL, airflow_settings)
    connection.spark.sql(f"USE {CATALOG}.{NS}")
    yield service
    for ident in base.catalog.catalog.list_tables(NS):
        base.catalog.catalog.purge_table(ident)


@pytest.fixture(scope="module")
def client(airflow_settings):
    from mt_magic.scheduling.airflow_api import AirflowClient

    return AirflowClient(airflow_settings)


def test_create_runs_on_airflow_a_chain_in_asset_order(mt, client, airflow: LocalAirflow) -> None:
    from mt_magic.scheduling.dags import dag_id

    spark = mt.workspace.spark
    spark.sql(f"CREATE TABLE {CATALOG}.{NS}.events (ds STRING, k INT, v INT) USING iceberg")
    spark.sql(
        f"INSERT INTO {CATALOG}.{NS}.events VALUES ('2026-01-01', 1, 2), ('2026-01-01', 1, 3), ('2026-01-02', 2, 5)"
    )
    spark.sql(f"CREATE TABLE {CATALOG}.{NS}.bad (k INT, v INT) USING iceberg")
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.bad VALUES (1, 7), (2, 1000)")
    created = run(
        mt,
        "CREATE MATERIALIZED TABLE daily PARTITIONED BY (ds) WITH ('scheduler' = 'airflow') "
        f"FRESHNESS = INTERVAL '1' HOUR AS {DAILY_QUERY}",
    )
    on_airflow = "WITH ('scheduler' = 'airflow') FRESHNESS = INTERVAL '1' HOUR"
    run(mt, f"CREATE MATERIALIZED TABLE by_ds {on_airflow} AS {BY_DS_QUERY}")
    run(mt, f"CREATE MATERIALIZED TABLE broken {on_airflow} AS {BROKEN_QUERY}")
    assert created.refresh is None and "Airflow" in created.message, created.message
    assert mt.workspace.catalog.load(DAILY).last_refresh() is None  # the kernel did not populate it

    for name in (DAILY, BY_DS, BROKEN):
        wait_until(lambda n=name: _parsed(client, dag_id(n)), 180, f"Airflow to parse the DAG of {name}")
    first = finished_run(client, dag_id(DAILY), 420)
    assert first.state == "success", airflow.task_log(dag_id(DAILY), first.run_id, 1)[-3000:]
    chained = finished_run(client, dag_id(BY_DS), 300, run_type="asset_triggered")
    assert chained.state == "success", airflow.task_log(dag_id(BY_DS), chained.run_id, 1)[-3000:]
    daily_commit = mt.workspace.catalog.load(DAILY).last_refresh()[0].committed_at
    assert parse_time(chained.start_date) >= daily_commit, (daily_commit, chained)  # daily's Asset event started it

    assert rows(spark, f"SELECT * FROM {DAILY}") == rows(spark, DAILY_QUERY)
    assert rows(spark, f"SELECT * FROM {BY_DS}") == rows(spark, BY_DS_QUERY)
    last = mt.workspace.catalog.load(DAILY).last_refresh()
    assert last is not None and last[0].summary.get("mt.refresh-trigger") == "scheduled"
    log = airflow.task_log(dag_id(DAILY), first.run_id, 1)
    assert "mt_magic: full refresh of " + DAILY in log and "Spark jobs [" in log, log[-3000:]
    # the first run's event: under load the DAG can run again before this reads them (a no-op, 0 rows, newest first)
    [event] = [e for e in client.asset_events(dag_id(DAILY)) if e.get("source_run_id") == first.run_id]
    assert event["extra"]["table"] == DAILY and event["extra"]["rows"] == 2 and event["extra"]["spark_job_ids"]


def test_a_failing_refresh_is_a_failed_task_with_its_error(mt, client, airflow: LocalAirflow) -> None:
    from mt_magic.scheduling.dags import dag_id

    failed = finished_run(client, dag_id(BROKEN), 420)
    assert failed.state == "failed"
    for attempt in (1, 2):  # MT_MAGIC_AIRFLOW_RETRIES=1: tried twice
        log = airflow.task_log(dag_id(BROKEN), failed.run_id, attempt)
        assert "v too large: 1000" in log, log[-3000:]
    assert mt.workspace.catalog.load(BROKEN).last_refresh() is None  # nothing committed


def test_bad_credentials_unreachable_airflow_or_a_dag_not_parsed_change_nothing(
    mt, client, airflow: LocalAirflow, airflow_settings
) -> None:
    from mt_magic.errors import WorkflowSchedulerError
    from mt_magic.scheduling.airflow_api import AirflowSettings
    from mt_magic.scheduling.dags import dag_id
    from mt_magic.vocabulary import WorkflowSchedulerKind

    runs_before = len(client.dag_runs(dag_id(DAILY)))
    wrong = replace(airflow_settings, password="not-the-password")
    mt.workflows.configure(WorkflowSchedulerKind.KERNEL, wrong)
    try:
        with pytest.raises(WorkflowSchedulerError, match="refused user 'mt_admin'.*MT_MAGIC_AIRFLOW_PASSWORD"):
            run(mt, "ALTER MATERIALIZED TABLE daily SUSPEND")
        assert not mt.workspace.catalog.load_materialized(DAILY)[1].suspended
        assert not client.dag(dag_id(DAILY)).is_paused
        mt.workflows.configure(WorkflowSchedulerKind.KERNEL, AirflowSettings("http://127.0.0.1:9", "u", "p", timeout=3))
        with pytest.raises(WorkflowSchedulerError, match="cannot be reached.*MT_MAGIC_AIRFLOW_URL"):
            run(mt, "ALTER MATERIALIZED TABLE daily REFRESH")
    finally:
        mt.workflows.configure(WorkflowSchedulerKind.KERNEL, airflow_settings)
    assert len(client.dag_runs(dag_id(DAILY))) == runs_before

    processor = airflow.processes["dag-processor"].pid
    os.killpg(processor, signal.SIGSTOP)  # Airflow parses no DAG file until SIGCONT: LATE's DAG cannot appear
    try:
        on_airflow = "WITH ('scheduler' = 'airflow') FRESHNESS = INTERVAL '1' HOUR"
        run(mt, f"CREATE MATERIALIZED TABLE late {on_airflow} AS {BY_DS_QUERY}")
        with pytest.raises(WorkflowSchedulerError, match="has no DAG 'mt__mtit.airflow_e2e.late' yet"):
            run(mt, "ALTER MATERIALIZED TABLE late SUSPEND")
        assert not mt.workspace.catalog.load_materialized(LATE)[1].suspended
        run(mt, "DROP MATERIALIZED TABLE late")  # a DAG never parsed is fine to drop
    finally:
        os.killpg(processor, signal.SIGCONT)


def test_suspend_resume_refresh_partition_and_drop_reach_airflow(mt, client, airflow: LocalAirflow) -> None:
    from mt_magic.scheduling.dags import dag_id

    spark = mt.workspace.spark
    run(mt, "ALTER MATERIALIZED TABLE daily SUSPEND")
    assert client.dag(dag_id(DAILY)).is_paused
    assert mt.workspace.catalog.load_materialized(DAILY)[1].suspended
    run(mt, "ALTER MATERIALIZED TABLE daily RESUME")
    assert not client.dag(dag_id(DAILY)).is_paused

    run(mt, "DROP MATERIALIZED TABLE by_ds")  # first: daily's Asset event would start it again after the backfill
    assert client.dag(dag_id(BY_DS)).is_paused  # at once; the next parse drops it

    spark.sql(f"INSERT INTO {CATALOG}.{NS}.events VALUES ('2026-01-01', 1, 100), ('2026-01-02', 2, 50)")
    stale_day = rows(spark, f"SELECT * FROM {DAILY} WHERE ds = '2026-01-01'")
    result = run(mt, "ALTER MATERIALIZED TABLE daily REFRESH PARTITION (ds = '2026-01-02')")
    assert result.refresh is None and "Airflow run" in result.message, result.message
    backfill = wait_until(
        lambda: next((r for r in client.dag_runs(dag_id(DAILY)) if r.conf and r.state in ("success", "failed")), None),
        420,
        "the backfill run",
        interval=2,
    )
    assert backfill.conf == {"partition": {"ds": "2026-01-02"}}
    assert backfill.state == "success", airflow.task_log(dag_id(DAILY), backfill.run_id, 1)[-3000:]
    assert rows(spark, f"SELECT * FROM {DAILY} WHERE ds = '2026-01-02'") == rows(
        spark, f"SELECT * FROM ({DAILY_QUERY}) WHERE ds = '2026-01-02'"
    )
    # only the partition: the backfill's own commit (a scheduled run may follow it when the hour turns, and
    # refresh the whole table: a 1-hour DAG ticks on the hour)
    snapshots = mt.workspace.catalog.load(DAILY).snapshots
    backfill_commit = next(s for s in reversed(snapshots) if s.summary.get("mt.refresh-trigger") == "manual")
    assert json.loads(backfill_commit.summary["mt.partition"]) == {"ds": "2026-01-02"}
    assert backfill_commit.summary.get("changed-partition-count") == "1"
    if not any(s.summary.get("mt.refresh-trigger") == "scheduled" for s in snapshots[-2:]):
        assert rows(spark, f"SELECT * FROM {DAILY} WHERE ds = '2026-01-01'") == stale_day

    run(mt, "DROP MATERIALIZED TABLE daily")
    assert client.dag(dag_id(DAILY)).is_paused
    wait_stale(client, dag_id(DAILY))  # at a parse of the DAG file


def _parsed(client, dag: str) -> bool:
    from mt_magic.scheduling.airflow_api import DagNotFoundError

    try:
        client.dag(dag)
        return True
    except DagNotFoundError:
        return False
