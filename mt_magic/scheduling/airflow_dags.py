"""Airflow DAGs from the catalog: one per materialized table whose definition asks for Airflow.

Drop a three-line file in Airflow's DAGs folder::

    # dags/materialized_tables.py
    from mt_magic.scheduling.airflow_dags import materialized_table_dags

    globals().update(materialized_table_dags())

At each parse the DAG processor lists the catalog's materialized tables and builds a DAG for each table with
``WITH ('scheduler' = 'airflow')`` (:mod:`.dags` says how: cron, interval, or its upstream tables' Assets). A
dropped table's DAG disappears at the next parse; CREATE's DAG appears at the next parse.

**How it reads the catalog inside Airflow's virtualenv:** with pyiceberg and mt_magic's ``catalog`` package only
(mt_magic installed there without its dependencies: ``scripts/setup.sh --test``). Parsing must be quick and
JVM-free — the DAG processor parses the file every ``min_file_process_interval`` with a timeout — and the
catalog package is Spark-free by contract (import-linter), so the definitions are decoded by the same code the
kernel uses. The catalog is found the way everything else finds it: ``MT_MAGIC_CATALOG`` (default ``mt``)
configured for pyiceberg (``PYICEBERG_CATALOG__<NAME>__URI`` …), else the running embedded server of
``MT_MAGIC_HOME``; the DAG file never starts a server.

**Each task** runs ``<python> -m mt_magic refresh <table>`` with the project's interpreter (``MT_MAGIC_PYTHON``,
default: the ``.venv`` next to this checkout), the kernel's own refresh code on Spark under the table's refresh
lease; its output is the task's log, and its result line (strategy, rows, snapshot, Spark job ids) becomes the
extra of the table's Asset event. A failed refresh fails the task with its error; Airflow retries it
(``MT_MAGIC_AIRFLOW_RETRIES``, default 2, every ``MT_MAGIC_AIRFLOW_RETRY_DELAY`` seconds, default 60).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from mt_magic.errors import CatalogError, WorkflowSchedulerError
from mt_magic.scheduling.dags import DagSpec, airflow_specs, catalog_dag_id

log = logging.getLogger(__name__)

RESULT_PREFIX = "mt_magic result: "
"""The one-shot refresh's last line (``mt_magic.oneshot.RESULT_PREFIX``; that module needs Spark, so not imported)."""
TRIGGERS = {"scheduled": "scheduled", "asset_triggered": "cascade"}
"""Airflow run type → the refresh's recorded trigger (everything else is a manual run)."""


def project_python(env: Mapping[str, str] | None = None) -> str:
    """The interpreter that runs refreshes: ``MT_MAGIC_PYTHON``, else this checkout's ``.venv``.

    Raises:
        WorkflowSchedulerError: neither exists (the DAG file's import error in Airflow says so).
    """
    env = os.environ if env is None else env
    given = env.get("MT_MAGIC_PYTHON")
    candidate = Path(given) if given else Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"
    if not candidate.exists():
        raise WorkflowSchedulerError(
            f"no Python to run refreshes with at {candidate}: set MT_MAGIC_PYTHON to the interpreter of the "
            "virtualenv where mt_magic and PySpark are installed"
        )
    return str(candidate)


def catalog_tables(catalog_name: str) -> list[tuple[str, Any]]:
    """(name, definition) of every materialized table in the catalog, read with pyiceberg."""
    from mt_magic.catalog.client import CatalogConfig, configured_catalog, open_catalog
    from mt_magic.catalog.embedded import running_server
    from mt_magic.catalog.tables import MaterializedCatalog

    config = configured_catalog(catalog_name)
    if config is None:
        server = running_server()
        if server is None:
            raise CatalogError(
                f"no catalog {catalog_name!r} for the materialized tables' DAGs: configure it for pyiceberg "
                f"(PYICEBERG_CATALOG__{catalog_name.upper()}__URI=…) or start the embedded server of MT_MAGIC_HOME "
                "(python -m mt_magic.catalog serve)"
            )
        properties = {"type": "rest", "uri": server.uri, "warehouse": server.warehouse}
        if server.token:
            properties["token"] = server.token
        config = CatalogConfig(catalog_name, properties, embedded=True)
    catalog = MaterializedCatalog(open_catalog(config), catalog_name)
    return [(info.name, info.definition) for info in catalog.list_materialized() if info.definition is not None]


def run_refresh(table: str, catalog_name: str, python: str, context: Mapping[str, Any]) -> dict[str, Any]:
    """The task: one refresh of ``table`` in a subprocess; its output goes to the task log line by line.

    Returns:
        The refresh's result (the Asset event's extra).

    Raises:
        RuntimeError: the refresh failed (the task fails with the refresh's error and Airflow retries it).
    """
    dag_run = context["dag_run"]
    conf = dict(getattr(dag_run, "conf", None) or {})
    run_type = str(getattr(getattr(dag_run, "run_type", ""), "value", getattr(dag_run, "run_type", "")))
    command = [python, "-m", "mt_magic", "refresh", table, "--catalog", catalog_name]
    command += ["--trigger", TRIGGERS.get(run_type, "manual")]
    for key, value in dict(conf.get("partition") or {}).items():
        command += ["--partition", f"{key}={value}"]
    log.info("running %s", " ".join(command))
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_refresh_env(context), bufsize=1
    )
    assert process.stdout is not None
    result: dict[str, Any] | None = None
    errors: list[str] = []
    for line in process.stdout:
        line = line.rstrip("\n")
        log.info("%s", line)
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX) :])
        elif line.startswith("error: "):
            errors.append(line[len("error: ") :])
    code = process.wait()
    if code != 0 or result is None:
        raise RuntimeError(f"refresh of {table} failed (exit {code}): " + ("; ".join(errors) or "see the log above"))
    return result


def _refresh_env(context: Mapping[str, Any]) -> dict[str, str]:
    """The task's environment without Airflow's own interpreter settings (the refresh runs in another venv), and
    with ``OPENLINEAGE_PARENT_ID`` naming this task's OpenLineage run when Airflow's OpenLineage provider is
    installed, so the refresh's lineage events hang under the task's (:mod:`mt_magic.lineage`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    try:
        from airflow.providers.openlineage.plugins.macros import lineage_parent_id
    except ImportError:  # no provider: Airflow sends no lineage of its own to hang under
        return env
    ti = context.get("ti") or context.get("task_instance")
    if ti is not None:
        env["OPENLINEAGE_PARENT_ID"] = lineage_parent_id(ti)
    return env


def build_dag(spec: DagSpec, catalog_name: str, python: str) -> Any:
    """The Airflow DAG of one table: a single ``refresh`` task whose outlet is the table's Asset."""
    from airflow.sdk import DAG, Asset, AssetAny, CronTriggerTimetable, DeltaTriggerTimetable, task

    asset = Asset(name=spec.table, uri=spec.asset_uri)
    schedule: Any
    if spec.upstream_assets:
        schedule = AssetAny(*(Asset(name=name, uri=uri) for name, uri in spec.upstream_assets))
    elif spec.cron:
        schedule = CronTriggerTimetable(spec.cron, timezone="UTC", run_immediately=True)
    else:
        schedule = DeltaTriggerTimetable(spec.every or timedelta(hours=1))
    retries = int(os.environ.get("MT_MAGIC_AIRFLOW_RETRIES", "2"))
    retry_delay = timedelta(seconds=float(os.environ.get("MT_MAGIC_AIRFLOW_RETRY_DELAY", "60")))
    with DAG(
        dag_id=spec.dag_id,
        description=spec.description,
        schedule=schedule,
        catchup=False,  # missed refreshes coalesce into one run, as in the kernel; no start date: the first run
        # is at once (trigger timetables run the latest tick when a DAG has no runs), so a new table is populated
        max_active_runs=1,  # one refresh at a time (the lease would serialize them anyway)
        is_paused_upon_creation=spec.suspended,
        tags=["mt_magic", "materialized table"],
        params={},
    ) as dag:
        table = spec.table

        @task(task_id="refresh", outlets=[asset], retries=retries, retry_delay=retry_delay)
        def refresh(**context: Any) -> dict[str, Any]:
            result = run_refresh(table, catalog_name, python, context)
            context["outlet_events"][asset].extra = result
            return result

        refresh()
    return dag


def catalog_dag(catalog_name: str) -> Any:
    """The DAG file's own DAG (``mt__<catalog>``): no schedule, paused, never runs. It exists so a kernel can ask
    Airflow to parse this file now (``PUT /api/v2/parseDagFile/{its file_token}``) before any table is on Airflow:
    the first CREATE's DAG then appears at once instead of at the next periodic parse."""
    from airflow.sdk import DAG, task

    with DAG(
        dag_id=catalog_dag_id(catalog_name),
        description=f"mt_magic: builds the DAGs of catalog {catalog_name}'s materialized tables (never runs)",
        schedule=None,
        is_paused_upon_creation=True,
        tags=["mt_magic"],
    ) as dag:

        @task(task_id="nothing")
        def nothing() -> None:
            """Never runs: the DAG is a handle on the DAG file."""

        nothing()
    return dag


def materialized_table_dags(catalog_name: str | None = None) -> dict[str, Any]:
    """The catalog's DAG and every materialized table's DAG on Airflow, by DAG id (for ``globals().update(…)`` in
    a DAG file)."""
    name = catalog_name or os.environ.get("MT_MAGIC_CATALOG", "mt")
    python = project_python()
    specs = airflow_specs(catalog_tables(name))
    dags = {spec.dag_id: build_dag(spec, name, python) for spec in specs}
    dags[catalog_dag_id(name)] = catalog_dag(name)
    return dags
