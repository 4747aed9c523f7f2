"""Helpers of the Airflow tests: an inline service per module, waiting on Airflow, running statements, the one-shot
refresh each Airflow task runs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from functools import partial

import waiting
from shared_catalog import CATALOG


def inline_service(connection, namespace: str, airflow_settings=None) -> Iterator:  # type: ignore[no-untyped-def]
    """An inline service whose unqualified names live in ``namespace`` and whose Airflow is the run's (none without
    ``airflow_settings``); the namespace's tables are purged afterwards (for a fixture)."""
    from dataclasses import replace

    from mt_magic.runtime.refresh.engine import Engine
    from mt_magic.runtime.service import MaterializedTables
    from mt_magic.vocabulary import WorkflowSchedulerKind

    base = connection.service.workspace
    base.catalog.catalog.create_namespace_if_not_exists(namespace)
    service = MaterializedTables.inline(
        Engine(replace(base, default_namespace=namespace), connection.service.engine.jobs)
    )
    if airflow_settings is not None:
        service.workflows.configure(WorkflowSchedulerKind.KERNEL, airflow_settings)
    connection.spark.sql(f"USE {CATALOG}.{namespace}")
    try:
        yield service
    finally:
        service.workflows.close()
        for ident in base.catalog.catalog.list_tables(namespace):
            base.catalog.catalog.purge_table(ident)


wait_until = partial(waiting.wait_until, interval=1.0)
"""The tests' wait, polling Airflow's REST API once a second."""


def run(mt, sql: str):  # type: ignore[no-untyped-def]
    from mt_magic.sql import parse_cell

    (statement,) = parse_cell(sql)
    return mt.execute(statement)


def one_shot(table: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m mt_magic refresh`` of ``table`` (what each Airflow task runs) on the small local Spark the tests'
    Airflow tasks get."""
    env = {**os.environ, "MT_MAGIC_SPARK_MASTER": "local[1]", "MT_MAGIC_DRIVER_MEMORY": "1g"}
    command = [sys.executable, "-m", "mt_magic", "refresh", table, "--catalog", CATALOG, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=400)


def rows(spark, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def finished_run(client, dag_id: str, timeout: float, after: str = "", run_type: str = ""):  # type: ignore[no-untyped-def]
    """The DAG's newest finished run (started after ``after``), waiting for it."""

    def done():  # type: ignore[no-untyped-def]
        from mt_magic.scheduling.airflow_api import DagNotFoundError

        try:
            runs = client.dag_runs(dag_id)
        except DagNotFoundError:
            return None
        for r in runs:
            if r.state in ("success", "failed") and (r.start_date or "") > after and run_type in ("", r.run_type):
                return r
        return None

    return wait_until(done, timeout, f"a finished run of {dag_id}", interval=2)


def wait_stale(client, dag_id: str, timeout: float = 180) -> None:  # type: ignore[no-untyped-def]
    """Until Airflow marks ``dag_id`` stale (gone from its DAG file). Airflow does so when a parse of the file more
    than ``stale_dag_threshold`` (10 s) after the DAG's own last parse no longer builds it; these tests turn the
    periodic parse off, so this asks for parses (of the DAG's file) until then."""
    token = client.dag(dag_id).file_token

    def stale() -> bool:
        if client.dag(dag_id).is_stale:
            return True
        client.reparse(token)
        return False

    wait_until(stale, timeout, f"Airflow to mark {dag_id} stale", interval=5)
