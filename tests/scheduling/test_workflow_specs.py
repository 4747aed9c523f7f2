"""The workflow-scheduler seam without Airflow running: which scheduler a table has, the DAG its definition asks
for (schedule, Asset, upstream Assets), the WITH option's check, and the Airflow settings' errors."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from mt_magic.catalog.definitions import MaterializedTableDefinition
from mt_magic.errors import DefinitionError, WorkflowSchedulerError
from mt_magic.scheduling.airflow_api import AirflowSettings
from mt_magic.scheduling.dags import airflow_specs, asset_uri, dag_id
from mt_magic.scheduling.workflow import scheduler_of
from mt_magic.sql import parse_cell
from mt_magic.sql.errors import UnsupportedOptionError
from mt_magic.vocabulary import RefreshMode, WorkflowSchedulerKind


def definition(mode: RefreshMode, upstream: tuple[str, ...] = (), scheduler: str | None = "airflow", **kw):
    options = {"scheduler": scheduler} if scheduler else {}
    return MaterializedTableDefinition(
        query="SELECT 1",
        expanded_query="SELECT 1",
        freshness=kw.pop("freshness", "INTERVAL '1' HOUR"),
        refresh_mode=mode,
        interval=kw.pop("interval", timedelta(hours=1)),
        options=options,
        upstream=upstream,
        **kw,
    )


def test_the_kernel_is_the_default_and_an_unknown_scheduler_is_refused() -> None:
    assert scheduler_of({}) is WorkflowSchedulerKind.KERNEL
    assert scheduler_of({"Scheduler": "AIRFLOW"}) is WorkflowSchedulerKind.AIRFLOW
    with pytest.raises(DefinitionError, match=r"WITH \('scheduler' = 'cron'\) is not a known value. Fix: use 'kernel'"):
        scheduler_of({"scheduler": "cron"})
    with pytest.raises(
        UnsupportedOptionError, match=r"WITH \('scheduler' = 'dolphin'\) is not a known value.*'airflow'"
    ):
        parse_cell("CREATE MATERIALIZED TABLE t WITH ('scheduler' = 'dolphin') AS SELECT 1 AS a")


def test_one_dag_per_airflow_table_scheduled_by_cron_interval_or_upstream_assets() -> None:
    tables = [
        ("mt.s.full", definition(RefreshMode.FULL, cron="0 */1 * * *")),
        (
            "mt.s.cont",
            definition(RefreshMode.CONTINUOUS, freshness="INTERVAL '5' MINUTE", interval=timedelta(minutes=5)),
        ),
        ("mt.s.secs", definition(RefreshMode.FULL, cron="* * * * * */30", interval=timedelta(seconds=30))),
        ("mt.s.down", definition(RefreshMode.CONTINUOUS, upstream=("mt.s.full", "mt.s.kernel", "mt.s.plain"))),
        ("mt.s.kernel", definition(RefreshMode.CONTINUOUS, scheduler=None)),
    ]
    specs = {spec.table: spec for spec in airflow_specs(tables)}
    assert set(specs) == {"mt.s.full", "mt.s.cont", "mt.s.secs", "mt.s.down"}  # the kernel's table has no DAG
    assert (specs["mt.s.full"].cron, specs["mt.s.full"].every) == ("0 */1 * * *", None)
    assert (specs["mt.s.cont"].cron, specs["mt.s.cont"].every) == (None, timedelta(minutes=5))
    assert (specs["mt.s.secs"].cron, specs["mt.s.secs"].every) == (None, timedelta(seconds=30))  # Airflow: no seconds
    assert specs["mt.s.down"].upstream_assets == (("mt.s.full", "iceberg://mt/s/full"),)  # only tables on Airflow
    assert "on updates of mt.s.full" in specs["mt.s.down"].description


def test_dag_ids_and_asset_uris_carry_any_table_name() -> None:
    assert dag_id("mt.sales.daily") == "mt__mt.sales.daily"
    odd = dag_id("mt.sales.daily totals ü")
    assert odd.startswith("mt__mt.sales.daily_totals__") and odd != dag_id("mt.sales.daily_totals_ü")
    assert asset_uri("mt.sales.a/b c") == "iceberg://mt/sales/a%2Fb%20c"


def test_airflow_settings_say_what_is_missing() -> None:
    assert AirflowSettings.from_env({}) is None
    with pytest.raises(WorkflowSchedulerError, match="no credentials for Airflow at http://af:8080.*USERNAME"):
        AirflowSettings.from_env({"MT_MAGIC_AIRFLOW_URL": "http://af:8080/"})
    with pytest.raises(WorkflowSchedulerError, match="'af:8080' is not an http"):
        AirflowSettings("af:8080", token="t")
    settings = AirflowSettings.from_env({"MT_MAGIC_AIRFLOW_URL": "http://af:8080/", "MT_MAGIC_AIRFLOW_TOKEN": "t"})
    assert settings == AirflowSettings("http://af:8080", token="t")


def test_the_card_says_a_table_runs_on_airflow() -> None:
    from mt_magic.runtime.status import TableStatus
    from mt_magic.vocabulary import JobState
    from mt_magic.widgets.render import detail_rows

    status = TableStatus("mt.s.t", RefreshMode.FULL, timedelta(hours=1), JobState.IDLE)
    assert "scheduler" not in dict(detail_rows(status))
    on_airflow = dict(detail_rows(TableStatus(**{**status.__dict__, "scheduler": WorkflowSchedulerKind.AIRFLOW})))
    assert on_airflow["scheduler"].startswith("airflow: its runs, retries and logs are there")
    from mt_magic.widgets.render import dashboard_text

    assert "FULL · on airflow" in dashboard_text([replace(status, scheduler=WorkflowSchedulerKind.AIRFLOW)])
    assert "on airflow" not in dashboard_text([status])


def test_a_move_to_airflow_without_airflow_configured_changes_nothing(mt, spark, monkeypatch) -> None:
    """CREATE OR ALTER naming Airflow for a kernel table, with no Airflow configured: refused, saying how to
    configure it, and the query and the scheduler stay."""
    monkeypatch.delenv("MT_MAGIC_AIRFLOW_URL", raising=False)
    namespace = mt.workspace.default_namespace
    spark.sql(f"CREATE TABLE mtit.{namespace}.src (k INT) USING iceberg")
    spark.sql(f"INSERT INTO mtit.{namespace}.src VALUES (1)")
    (create,) = parse_cell("CREATE MATERIALIZED TABLE t AS SELECT k FROM src")
    mt.execute(create).refresh.result()
    on_airflow = "WITH ('scheduler' = 'airflow')"
    (move,) = parse_cell(f"CREATE OR ALTER MATERIALIZED TABLE t {on_airflow} AS SELECT k, 2 AS two FROM src")
    with pytest.raises(WorkflowSchedulerError, match="no Airflow is configured: set MT_MAGIC_AIRFLOW_URL"):
        mt.execute(move)
    _, definition = mt.workspace.catalog.load_materialized(f"mtit.{namespace}.t")
    assert definition.query == "SELECT k FROM src" and "scheduler" not in definition.options
    assert mt.manager.knows(f"mtit.{namespace}.t")
