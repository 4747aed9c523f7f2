"""Statements that change tables on a real Airflow 3, and Airflow's view of them in the kernel: the example script
runs a chain on Airflow; the card, its text (``%mt status``) and DESCRIBE show the last run, its log link and the
next run; SET FRESHNESS changes the DAG's schedule as Airflow's REST API reads it back, RENAME gives the table a new
DAG and pauses the old one, with no periodic parse (the conftest turns it off: only the statements' parse
requests can do it); a refused Airflow changes nothing; a table moves kernel → Airflow → kernel without two
schedulers refreshing it.

The tests of this module run in order on the same tables (Airflow's runs are what takes time: three Spark tasks).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from airflow_helpers import finished_run, inline_service, rows, run, wait_stale, wait_until
from shared_catalog import CATALOG

from mt_magic.scheduling.local_airflow import LocalAirflow

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.timeout(1800)]

NS = "airflow_statements"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DAILY, BY_DAY, MOVED = (f"{CATALOG}.{NS}.{t}" for t in ("daily_revenue", "revenue_by_day", "moved"))


@pytest.fixture(scope="module")
def mt(connection, airflow_settings) -> Iterator[Any]:
    yield from inline_service(connection, NS, airflow_settings)


@pytest.fixture(scope="module")
def client(airflow_settings):
    from mt_magic.scheduling.airflow_api import AirflowClient

    client = AirflowClient(airflow_settings)
    yield client
    client.close()


def test_the_example_runs_a_chain_on_airflow_and_prints_its_view(mt, airflow: LocalAirflow) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import airflow_tables
    finally:
        sys.path.remove(str(EXAMPLES))
    printed: list[str] = []
    views = airflow_tables.run(mt, timeout=840, say=printed.append)
    for name in (DAILY, BY_DAY):
        assert views[name].last_run.state == "success", airflow.task_log(
            views[name].dag_id, views[name].last_run.run_id, 1
        )
    assert views[BY_DAY].last_run.run_type == "asset_triggered"  # on daily_revenue's Asset event
    text = "\n".join(printed)
    assert f"{DAILY}, as Airflow sees it:" in text and "airflow last run: success" in text
    spark = mt.workspace.spark
    expected = "SELECT day, sum(amount) AS revenue FROM orders GROUP BY day"
    assert rows(spark, f"SELECT * FROM {BY_DAY}") == rows(spark, expected)


def test_card_its_text_and_describe_show_the_last_airflow_run_its_log_and_the_next_run(
    mt, client, airflow: LocalAirflow
) -> None:
    from mt_magic.scheduling.airflow_runs import airflow_time
    from mt_magic.scheduling.dags import dag_id
    from mt_magic.widgets.actions import ServiceActions
    from mt_magic.widgets.live import LiveViews

    dag = dag_id(DAILY)
    live = LiveViews(mt, ServiceActions(mt), tick_every=None)
    try:
        card = live.card(DAILY)

        def shown() -> tuple[Any, Any, str] | None:
            """Airflow's last run and next run as the card shows them, read again each time: the DAG is hourly, so
            at the top of an hour a new scheduled run appears (and runs) while the test looks."""
            card.tick()
            last, next_run = client.dag_runs(dag, limit=1)[0], client.dag(dag).next_run_after
            link = f"{airflow.url}/dags/{quote(dag, safe='')}/runs/{quote(last.run_id, safe='')}/tasks/refresh"
            shows = card.airflow.value
            done = last.state == "success" and "success" in shows and f'href="{link}"' in shows
            return (last, next_run, link) if done and next_run else None

        last, next_run, link = wait_until(
            shown, 180, "the card to show Airflow's last run, its log and the next run", interval=2
        )
        text = card.fallback_text()  # what %mt status prints where widgets do not render
        assert "airflow last run: success · scheduled · started " in text
        assert f"airflow log: {link}" in text
        assert f"airflow next run: {airflow_time(next_run)}" in text
        assert f"airflow DAG: {dag} · active" in text
    finally:
        live.close()
    logs = [airflow.task_log(dag, last.run_id, attempt) for attempt in (1, 2)]  # a loaded machine may retry
    # the link's run refreshed the table: a full refresh, or at the top of an hour the next scheduled run's (a no-op)
    assert any(f" refresh of {DAILY}: " in log for log in logs), logs[0][-3000:]
    facts = {row[0]: row[1] for row in run(mt, f"DESCRIBE MATERIALIZED TABLE {DAILY}").listing.rows}
    assert facts["# airflow last run"].startswith("success")
    assert facts["# airflow log"] == link and facts["# airflow next run"] == airflow_time(next_run)


def test_set_freshness_and_rename_reach_airflow_without_a_periodic_parse(mt, client) -> None:
    from mt_magic.scheduling.dags import dag_id, dag_spec

    before = client.dag(dag_id(DAILY))
    run(mt, f"ALTER MATERIALIZED TABLE {DAILY} SET FRESHNESS = INTERVAL '2' HOUR")
    after = wait_until(
        lambda: (d := client.dag(dag_id(DAILY))).last_parsed != before.last_parsed and d,
        120,
        "Airflow to parse the DAG file on the statement's request",
        interval=2,
    )
    spec = dag_spec(DAILY, mt.workspace.catalog.load_materialized(DAILY)[1], [DAILY])
    wanted = spec.cron or str(spec.every)  # Airflow's timetable summary: the cron, or the interval
    assert after.schedule != before.schedule and wanted in after.schedule, (before.schedule, after.schedule, wanted)

    run(mt, f"ALTER MATERIALIZED TABLE {BY_DAY} SUSPEND")  # its new DAG then starts paused: no Spark task here
    run(mt, f"ALTER MATERIALIZED TABLE {BY_DAY} RENAME TO by_day")
    assert client.dag(dag_id(BY_DAY)).is_paused  # at once
    renamed = wait_until(lambda: _dag_or_none(client, dag_id(f"{CATALOG}.{NS}.by_day")), 120, "the renamed DAG")
    assert renamed.is_paused  # the table is suspended
    wait_stale(client, dag_id(BY_DAY))  # the old DAG leaves Airflow


def test_a_refused_airflow_changes_nothing(mt, client, airflow_settings) -> None:
    from mt_magic.errors import WorkflowSchedulerError
    from mt_magic.scheduling.dags import dag_id
    from mt_magic.vocabulary import WorkflowSchedulerKind

    catalog = mt.workspace.catalog
    before, dag_before = catalog.load_materialized(DAILY)[1], client.dag(dag_id(DAILY))
    mt.workflows.configure(WorkflowSchedulerKind.KERNEL, replace(airflow_settings, password="wrong"))
    try:
        for sql in (
            f"ALTER MATERIALIZED TABLE {DAILY} SET FRESHNESS = INTERVAL '3' HOUR",
            f"ALTER MATERIALIZED TABLE {DAILY} SET REFRESH_MODE = FULL",
            f"ALTER MATERIALIZED TABLE {DAILY} RENAME TO elsewhere",
            f"ALTER MATERIALIZED TABLE {DAILY} SET ('scheduler' = 'kernel')",
            f"CREATE OR ALTER MATERIALIZED TABLE {DAILY} WITH ('scheduler' = 'kernel') AS SELECT 1 AS one",
        ):
            with pytest.raises(WorkflowSchedulerError, match="refused user 'mt_admin'"):
                run(mt, sql)
    finally:
        mt.workflows.configure(WorkflowSchedulerKind.KERNEL, airflow_settings)
    assert catalog.load_materialized(DAILY)[1] == before
    assert client.dag(dag_id(DAILY)).is_paused is dag_before.is_paused is False
    assert mt.status(DAILY).scheduler is WorkflowSchedulerKind.AIRFLOW


def test_a_table_moves_kernel_airflow_kernel_with_one_scheduler_at_a_time(mt, client, airflow: LocalAirflow) -> None:
    from mt_magic.scheduling.dags import dag_id
    from mt_magic.vocabulary import WorkflowSchedulerKind

    spark, catalog = mt.workspace.spark, mt.workspace.catalog
    query = "SELECT region, sum(amount) AS total FROM orders GROUP BY region"
    run(mt, f"CREATE MATERIALIZED TABLE moved FRESHNESS = INTERVAL '1' HOUR AS {query}").refresh.result()
    first = catalog.load(MOVED).last_refresh()[0]
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.orders VALUES ('2026-01-03', 'eu', 7)")  # Airflow's run has work to do

    run(mt, "ALTER MATERIALIZED TABLE moved SET ('scheduler' = 'airflow')")
    assert not mt.manager.knows(MOVED) or mt.status(MOVED).scheduler is WorkflowSchedulerKind.AIRFLOW
    on_airflow = finished_run(client, dag_id(MOVED), 420)  # the DAG appeared on the move's request and ran
    assert on_airflow.state == "success", airflow.task_log(dag_id(MOVED), on_airflow.run_id, 1)[-3000:]
    refreshed = catalog.load(MOVED).last_refresh()[0]
    assert refreshed.snapshot_id != first.snapshot_id and refreshed.summary.get("mt.refresh-trigger") == "scheduled"

    run(mt, "ALTER MATERIALIZED TABLE moved SET ('scheduler' = 'kernel')")
    assert client.dag(dag_id(MOVED)).is_paused  # paused before the catalog named the kernel
    assert mt.status(MOVED).scheduler is WorkflowSchedulerKind.KERNEL
    spark.sql(f"INSERT INTO {CATALOG}.{NS}.orders VALUES ('2026-01-04', 'us', 5)")
    run(mt, "ALTER MATERIALIZED TABLE moved REFRESH").refresh.result()  # the kernel refreshes it again
    assert rows(spark, f"SELECT * FROM {MOVED}") == rows(spark, query)
    wait_stale(client, dag_id(MOVED))  # the DAG leaves Airflow
    # one scheduler at a time: exactly one refresh per step (the kernel's, one Airflow run, the kernel's)
    triggers = [s.summary.get("mt.refresh-trigger") for s in catalog.load(MOVED).snapshots if s.refresh_state]
    assert triggers == ["initial", "scheduled", "manual"], triggers
    assert len(client.dag_runs(dag_id(MOVED))) == 1


def _dag_or_none(client, dag: str):  # type: ignore[no-untyped-def]
    from mt_magic.scheduling.airflow_api import DagNotFoundError

    try:
        return client.dag(dag)
    except DagNotFoundError:
        return None
